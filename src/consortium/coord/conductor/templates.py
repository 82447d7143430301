"""Baselines written in the workflow language, so they run through the same executor and traces:
single model, majority vote, mixture-of-agents, debate and self-reflection; and the family of
fixed workflows over a roster that a conductor's choice is measured against (`workflow_family`)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, permutations, product

from consortium.coord.base import Outcome
from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.tools import refuse_tool_names
from consortium.coord.conductor.workflow import Access, Workflow, build
from consortium.coord.spec_forms import WORKFLOW_KINDS
from consortium.core.errors import CoordinatorError
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

ANSWER = "Answer the question. End with 'The answer is …'."
SOLVE = "Solve it."
"""A family member's model step (on replay a step answers with its recorded sample anyway)."""


def single(model: str) -> Workflow:
    return build([model], [ANSWER], [()])


def majority_vote(voters: Sequence[str], judge: str) -> Workflow:
    """Independent answers, then a judge who reports the answer most of them give; the
    workflow returns the text of the voter whose answer the judge names, not the judge's reply."""
    n = len(voters)
    return build(
        [*voters, judge],
        [ANSWER] * n
        + [
            "Several independent answers to the question are above. Report the final answer "
            "that most of them agree on. End with 'The answer is …'."
        ],
        [*([()] * n), "all"],
        last_selects=True,
    )


def _rounds(
    members: Sequence[str], rounds: int, later: str
) -> tuple[list[str], list[str], list[Access], tuple[int, ...]]:
    """`rounds` rounds of `members`: the first answers alone, each later member sees the whole
    previous round and follows `later`. Returns the lists and the last round's step indices."""
    n = len(members)
    models: list[str] = []
    subtasks: list[str] = []
    access: list[Access] = []
    previous: tuple[int, ...] = ()
    for round_ in range(rounds):
        models += members
        subtasks += [ANSWER if round_ == 0 else later] * n
        access += [previous] * n
        previous = tuple(range(round_ * n, (round_ + 1) * n))
    return models, subtasks, access, previous


def mixture_of_agents(proposers: Sequence[str], aggregator: str, layers: int = 1) -> Workflow:
    """MoA: `layers` layers of proposers, each seeing the whole previous layer, then the
    aggregator, who sees the last layer."""
    models, subtasks, access, last = _rounds(
        proposers,
        layers,
        "Answers of other models are above. Use what is right in them and give an improved "
        "answer. End with 'The answer is …'.",
    )
    models.append(aggregator)
    subtasks.append(
        "Responses of several models are above. Synthesise them into one accurate, complete "
        "answer; do not trust any of them blindly. End with 'The answer is …'."
    )
    access.append(last)
    return build(models, subtasks, access)


def debate(debaters: Sequence[str], rounds: int = 2) -> Workflow:
    """Independent answers, then rounds in which each debater sees the previous round and
    defends or revises; the first debater closes with the final answer."""
    models, subtasks, access, last = _rounds(
        debaters,
        rounds,
        "Other debaters' answers are above. Point out their errors or your own, then give your "
        "updated answer. End with 'The answer is …'.",
    )
    models.append(debaters[0])
    subtasks.append(
        "The debate's last round is above. Give the final answer the debate supports. End with "
        "'The answer is …'."
    )
    access.append(last)
    return build(models, subtasks, access)


def self_reflection(model: str, rounds: int = 1) -> Workflow:
    """Answer, then `rounds` of critique and revision by the same model."""
    models = [model]
    subtasks = [ANSWER]
    access: list[Access] = [()]
    for _ in range(rounds):
        models += [model, model]
        subtasks += [
            "Critique the latest answer above: find mistakes or gaps. Do not rewrite it.",
            "Revise the answer in light of the critique above. End with 'The answer is …'.",
        ]
        last = len(models) - 3
        access += [(last,), (last, last + 1)]
    return build(models, subtasks, access)


def workflow_family(roster: Sequence[str]) -> dict[str, Workflow]:
    """Each model alone; each ordered pair, then `check` (the first answer that passes); each
    model three times (three recorded samples), then `vote` or `check`; every model, then
    `vote`. And cascades, whose later step runs only when `accept` confirms nothing: one model,
    `accept` (a program that passes its examples), another; two answers (two models, or one
    model twice), `accept` (they agree), a third model."""
    family = {model: build([model], [SOLVE], [()]) for model in roster}
    for first, second in permutations(roster, 2):
        family[f"{first}, {second}, check"] = build(
            [first, second, "check"], [SOLVE, SOLVE, ""], [(), (), "all"]
        )
        family[f"{first}, accept, {second}"] = build(
            [first, "accept", second], [SOLVE, "", SOLVE], [(), (0,), ()]
        )
    pairs = [*combinations(roster, 2), *((model, model) for model in roster)]
    for (first, second), last in product(pairs, roster):
        if last not in (first, second):
            asked = f"{first} x2" if first == second else f"{first}, {second}"
            family[f"{asked}, accept, {last}"] = build(
                [first, second, "accept", last], [SOLVE, SOLVE, "", SOLVE], [(), (), (0, 1), ()]
            )
    for model in roster:
        for tool in ("vote", "check"):
            family[f"{model} x3, {tool}"] = build(
                [model] * 3 + [tool], [SOLVE] * 3 + [""], [(), (), (), "all"]
            )
    n = len(roster)
    family["all, vote"] = build([*roster, "vote"], [SOLVE] * n + [""], [*([()] * n), "all"])
    return family


class WorkflowCoordinator:
    """Runs one fixed workflow on every task."""

    def __init__(
        self, workflow: Workflow, name: str, executor: WorkflowExecutor | None = None
    ) -> None:
        self.workflow = workflow
        self.name = name
        self.executor = executor or WorkflowExecutor()
        offered = self.executor.tools.available
        for step in workflow.steps:
            if step.tool and step.model not in offered:
                raise CoordinatorError(
                    f"workflow {name!r}: step {step.index} is the tool {step.model!r}, which "
                    f"this executor does not run (tools: {', '.join(offered)}; select needs a "
                    "scorer)"
                )

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        run = await self.executor.run(self.workflow, task.question, caller, task=task)
        return Outcome(run.answer, workflow=run, notes=tuple(run.notes))


TEMPLATES = WORKFLOW_KINDS
"""The baselines written as workflows (`workflow:KIND`). `judge-vote`: every model answers and
the first, as judge, reports the majority answer (an LLM judge; not the weighted vote over
extracted answers that `consortium train coordinator --kind vote` fits)."""


def template(kind: str, models: Sequence[str]) -> Workflow:
    """A named baseline over `models` (the first is the aggregator, judge or reflector)."""
    if not models:
        raise CoordinatorError("a workflow template needs at least one model")
    refuse_tool_names(models)
    lead = models[0]
    others = list(models[1:]) or [lead]
    if kind == "single":
        return single(lead)
    if kind == "judge-vote":
        return majority_vote(list(models), lead)
    if kind == "moa":
        return mixture_of_agents(others, lead)
    if kind == "debate":
        return debate(list(models[:3]) if len(models) > 1 else [lead, lead])
    if kind == "reflect":
        return self_reflection(lead)
    raise CoordinatorError(f"unknown workflow template {kind!r}; known: {', '.join(TEMPLATES)}")
