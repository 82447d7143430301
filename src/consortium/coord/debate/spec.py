"""`--policy debate:models=a,b[,c][:rounds=6][:stop=K][:lead=M][:always=1][:answers=KIND]
[:gate=FOLDER]`: the debate (`rule.DebateRule`) among pool models, in the order they speak (all
the pool's, in pool order, by default); `rounds` caps the later turns, `stop` stops after turn K,
`lead` takes the ties of an unresolved debate, `always=1` talks even when the first answers
agree, `answers` names the answer kind (default: each task's own), `gate` a fitted rule of when
to talk (`consortium debates fit-gate`), which takes its stronger model's first answer where it
says not to talk (and leads the ties of a debate that does not agree)."""

from __future__ import annotations

from pathlib import Path

from consortium.coord.debate.policy import DebateCoordinator
from consortium.coord.debate.rule import DebateRule
from consortium.coord.spec_forms import DEBATE_OPTIONS
from consortium.coord.spec_values import answer_kind, int_option, pool_models, spec_options
from consortium.core.errors import ConfigError
from consortium.pool.config import PoolConfig

DEBATE_KEYS = set(DEBATE_OPTIONS)
DEFAULT_ROUNDS = 6
"""The cap of FORD's two-model debates (three turns each)."""


def debate_from_spec(text: str, config: PoolConfig) -> DebateCoordinator:
    _, *rest = text.split(":")
    options = spec_options(text, [part for part in rest if part], DEBATE_KEYS)
    models = pool_models(config, options.get("models"), config.names)
    lead = options.get("lead")
    if lead is not None:
        lead = config.get(lead).name
    stop = options.get("stop")
    gate = None
    if "gate" in options:
        from consortium.coord.debate.gate import read_gate

        gate = read_gate(Path(options["gate"]))
        lead = lead or gate.lead
    try:
        rule = DebateRule(
            tuple(models),
            int_option(text, options, "rounds", DEFAULT_ROUNDS),
            None if stop is None else int_option(text, options, "stop", 0),
            always=int_option(text, options, "always", 0) > 0,
            lead=lead,
        )
    except ValueError as error:
        raise ConfigError(f"--policy {text!r}: {error}") from None
    kind = answer_kind(options.get("answers"), f"--policy {text!r}: answers")
    return DebateCoordinator(rule, text, kind, gate)


def rule_spec(rule: DebateRule) -> str:
    """The `debate:` spec of a rule (the inverse of `debate_from_spec`, without a gate)."""
    parts = [f"debate:models={','.join(rule.speakers)}", f"rounds={rule.max_rounds}"]
    if rule.stop_after is not None:
        parts.append(f"stop={rule.stop_after}")
    if rule.lead is not None:
        parts.append(f"lead={rule.lead}")
    if rule.always:
        parts.append("always=1")
    return ":".join(parts)
