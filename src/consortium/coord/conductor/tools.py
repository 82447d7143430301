"""Tool workers of the workflow language: the project's own answer combiners, written in
`model_id` by name like a model (`model_id = [0, 1, 2, "vote"]`).

A tool step calls no model: it passes on, verbatim, the text of one of the steps its access list
names, so it is free ($0, 0 tokens), deterministic, and the same on a replay and live.

- `vote`: the weighted plurality of their answers (`coord.answers.rules.weighted_plurality`).
- `check`: the first answer that passes its check (a program: its docstring examples in the
  sandbox; any other answer: one can be read); when none passes, the first step it sees.
- `accept`: ends the workflow with an answer the steps it sees confirm (a program: the first
  that passes its docstring examples; any other answer: at least two steps, all giving it); when
  none is confirmed, the workflow goes on, and the steps after it run. Later steps wait for it,
  so "ask a cheap model, accept, ask a costly one" pays for the costly one only when needed.
- `select`: the learned answer scorer's pick (`coord.answers.scoring.best_candidate`); offered
  only when a scorer is given.

Tool names are reserved: a pool model named like a tool cannot be a workflow's worker
(`refuse_tool_names`), so a name in `model_id` is never ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from consortium.core.errors import CoordinatorError
from consortium.records.schema import AnswerKind

TOOLS = ("vote", "check", "accept", "select")
WITHOUT_SCORER = ("vote", "check", "accept")
"""The tools every executor runs; `select` needs a scorer."""
STOPS = ("accept",)
"""Tools that may end the workflow: every later step waits for them."""

DESCRIPTIONS = {
    "vote": "the answer most of the steps it sees agree on (a weighted vote)",
    "check": "the first answer among the steps it sees that passes its check (a program: the "
    "examples in its docstring run; any other answer: an answer can be read)",
    "accept": "ends the workflow with an answer the steps it sees confirm (a program that "
    "passes the examples in its docstring; any other answer: two or more steps all give it); "
    "otherwise the next steps run, so a costly step after it is paid for only when needed",
    "select": "the answer a learned scorer rates most likely right among the steps it sees",
}

SUBTASKS = {
    "vote": "The weighted vote over the answers above.",
    "check": "The first of the answers above that passes its check.",
    "accept": "The answer above, when the answers above confirm it.",
    "select": "The answer above that the learned scorer rates best.",
}
"""A tool step's subtask when the workflow gives none: later steps that see the tool's output
see this as the instruction it answered."""


@dataclass(frozen=True)
class Scorer:
    """A fitted answer scorer (`consortium train coordinator`, kind `scorer`): its feature order
    (the models it was fitted with, as pool names) and its logistic weights."""

    models: tuple[str, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.weights) != 3 * len(self.models) + 5:
            raise CoordinatorError(
                f"the scorer has {len(self.weights)} weights; {len(self.models)} models need "
                f"{3 * len(self.models) + 5}"
            )


@dataclass(frozen=True)
class AnswerTools:
    """What the tool steps of a workflow work with."""

    answer_kind: AnswerKind | None = None
    """How answers are read and compared; None: the task's own (`task_kind.answer_kind_of`)."""
    weights: Mapping[str, float] = field(default_factory=dict)
    """The vote's weight per model; empty: every step's answer counts the same. With weights, a
    model missing from them votes with weight 0 (its answer stands only when no other is read)."""
    scorer: Scorer | None = None

    @property
    def available(self) -> tuple[str, ...]:
        """The tools a workflow may use: `select` only with a scorer."""
        return TOOLS if self.scorer is not None else WITHOUT_SCORER


def tool_name(value: str) -> str | None:
    """The tool `value` names (any case, spaces around), or None."""
    name = value.strip().lower()
    return name if name in TOOLS else None


def refuse_tool_names(models: Iterable[str]) -> None:
    """One line for a pool model named like a tool: tool names are reserved in workflows."""
    for model in models:
        if tool_name(model) is not None:
            raise CoordinatorError(
                f"pool model {model!r} has the name of a workflow tool ({', '.join(TOOLS)}); "
                "tool names are reserved in workflows: rename the model in the pool file"
            )
