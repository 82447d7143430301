"""The `--policy` forms: what `coord.registry.build_coordinator` resolves, named once for its
refusals, the help of `ask`, `eval` and `serve`, and the parsers (the conductor's options, the
baseline workflows); nothing is imported here, so the command line reads it at start."""

from __future__ import annotations

WORKFLOW_KINDS = ("single", "judge-vote", "moa", "debate", "reflect")
"""The baselines written as workflows (`coord.conductor.templates`)."""

CONDUCTOR_OPTIONS = (
    "workers",
    "recursion",
    "max_depth",
    "max_calls",
    "max_steps",
    "fallback",
    "answers",
    "tools",
    "examples",
)
"""The options of `conductor:NAME:key=value…` (`coord.conductor.spec`)."""

POLICY_FORMS = (
    "single:NAME",
    "random",
    f"conductor:NAME [:KEY=VALUE…] (KEY: {', '.join(CONDUCTOR_OPTIONS)})",
    f"workflow:KIND [:models=a,b] (KIND: {', '.join(WORKFLOW_KINDS)})",
    "debate:models=a,b [:rounds=6:stop=K:lead=M:gate=FOLDER]",
    "a policy folder (`consortium train coordinator` or `train trinity`)",
)
POLICY_SPECS = ", ".join(POLICY_FORMS[:-1]) + " or " + POLICY_FORMS[-1]
"""Every form, as one phrase."""
