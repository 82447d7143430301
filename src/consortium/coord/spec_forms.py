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

DEBATE_OPTIONS = ("models", "rounds", "stop", "lead", "always", "answers", "gate")
"""The options of `debate:key=value…` (`coord.debate.spec`)."""

POLICY_FORMS = (
    "single:NAME",
    "random",
    f"conductor:NAME [:KEY=VALUE…] (KEY: {', '.join(CONDUCTOR_OPTIONS)})",
    f"workflow:KIND [:models=a,b] (KIND: {', '.join(WORKFLOW_KINDS)})",
    f"debate:models=a,b [:KEY=VALUE…] (KEY: {', '.join(DEBATE_OPTIONS[1:])})",
    "a policy folder (`consortium train coordinator` or `train trinity`)",
)
POLICY_SPECS = ", ".join(POLICY_FORMS[:-1]) + " or " + POLICY_FORMS[-1]
"""Every form, as one phrase."""
