"""The answer-aware kinds by name, and what each does in words: what `train coordinator --kind`
takes, its help and its refusal (no rule is imported here: the command line reads it at start)."""

from __future__ import annotations

from consortium.core.errors import ConfigError

RULE_KINDS = (
    "single",
    "vote",
    "model-switch",
    "mot-cascade",
    "scorer",
    "scorer-cascade",
    "example-filter",
    "filter-and-cluster",
)
TURN_KINDS = ("trinity",)
"""Kinds whose every decision also picks a role, or submits (`trinity_turns.TrinityTurns`): a
policy folder of one runs as a `trinity_live.TrinityTeam`, on records as
`evaluation.recorded.episodes`."""
SIMPLEST_FIRST = (
    "single",
    "vote",
    "scorer",
    "filter-and-cluster",
    "model-switch",
    "mot-cascade",
    "scorer-cascade",
    "example-filter",
    *TURN_KINDS,
)
"""Every kind from the simplest team to the most complex: one model; then every model asked at
once and one answer picked (votes, the scorer's pick, the cluster vote); then cascades, which
decide after each answer whether to ask on; then TRINITY's multi-turn head. The tie rule
(`evaluation.recorded.selection.choose`) keeps the earlier of two kinds that tie on train in
everything else."""
CHECKED_KINDS = ("example-filter", "filter-and-cluster")
"""Kinds that select by each answer's check: they need a check beyond an answer being there
(for programs, the docstring examples), so they are fitted on code records only."""
AUTO = "auto"
"""Not a kind of its own: every rule kind that applies, fitted, and the best on train kept
(`train.answers.best_kind`)."""
FITTED_KINDS = (AUTO, *RULE_KINDS, *TURN_KINDS)
"""What `train coordinator --kind` takes."""

DESCRIPTIONS = {
    AUTO: "every kind below but trinity, fitted on train; the best train accuracy is kept, ties "
    "to the cheaper, then the fewer calls and parameters, then the simpler kind",
    "single": "the best model",
    "vote": "every model, weighted by train accuracy",
    "model-switch": "models in train-accuracy order until two answers agree",
    "mot-cascade": "cheap models' samples, escalate to a strong model when they disagree",
    "scorer": "every model; a logistic scorer of the answers' agreement, fitted on train, picks",
    "scorer-cascade": "FrugalGPT: models cheapest first, stop once the scorer is sure",
    "example-filter": "code: models in order, a sample at a time, until a program passes its "
    "docstring examples",
    "filter-and-cluster": "code: every model's samples, the largest cluster of programs that "
    "pass and behave alike",
    "trinity": "multi-turn: each turn a head trained with sep-CMA-ES reads the answers so far and "
    "picks a model as Worker or Verifier, or submits",
}
"""Each kind `--kind` takes, in words (its help lists them)."""


def simplicity(kind: str) -> int:
    """A kind's place in SIMPLEST_FIRST (a name not in it comes after every kind)."""
    return SIMPLEST_FIRST.index(kind) if kind in SIMPLEST_FIRST else len(SIMPLEST_FIRST)


def kinds_help() -> str:
    """Every kind `--kind` takes, each with what it does, in FITTED_KINDS' order."""
    return ", ".join(f"{kind} ({DESCRIPTIONS[kind]})" for kind in FITTED_KINDS)


def check_kind(kind: str, kinds: tuple[str, ...]) -> None:
    """Refuse a kind not among `kinds` in one line naming them all."""
    if kind not in kinds:
        raise ConfigError(f"--kind: expected one of {', '.join(kinds)}, got {kind!r}")
