"""Running a tool step: read the answers of the steps it sees as the answer kind's reader does,
classify them by the kind's agreement key, and pick one by the tool's rule — the same rules the
answer-aware policies play (`coord.answers`). No model is called.

Reading is the live answer-aware policies' (`coord.answers.reading.ReplyReader`): numbers, LaTeX,
dates and letters by the graders' extractors; a program checked and compared by its behaviour on
its prompt's docstring examples in the sandbox. Free text, which no grader reads, by its stated
final answer (`core.answers.final_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coord.answers.classes import AnswerClasses
from consortium.coord.answers.keys import text_key
from consortium.coord.answers.programs import passed
from consortium.coord.answers.reading import Reading, ReplyReader
from consortium.coord.answers.rules import NO_ANSWER, Seen, weighted_plurality
from consortium.coord.answers.scoring import best_candidate
from consortium.coord.conductor.tools import AnswerTools
from consortium.core.answers import final_answer
from consortium.records.schema import AnswerKind
from consortium.records.task_kind import answer_kind_of
from consortium.tasks.base import Task


@dataclass(frozen=True)
class Candidate:
    """One step a tool sees: its model (the tool's name for a tool step) and its output."""

    model: str
    text: str


@dataclass(frozen=True)
class ToolChoice:
    position: int
    """Which of the candidates, in the order given, is passed on."""
    reason: str
    ends: bool = False
    """An `accept` that confirmed its answer: the workflow ends with it."""


async def read_candidates(
    candidates: Sequence[Candidate], task: Task, kind: AnswerKind
) -> list[Seen]:
    """The candidates as an answer-aware rule sees them: model, sample, agreement class and, for
    programs, whether each passed its check."""
    texts = [c.text for c in candidates]
    if kind == "text":  # no grader reads free text: its stated final answer
        readings = [Reading(final_answer(t) or None) for t in texts]
        classes = AnswerClasses(text_key)
    else:
        reader = ReplyReader(kind)
        readings = await reader.read_all(task, texts)
        classes = AnswerClasses(reader.key, reader.same)
    samples: dict[str, int] = {}
    seen = []
    for candidate, reading in zip(candidates, readings, strict=True):
        k = samples.get(candidate.model, 0)
        samples[candidate.model] = k + 1
        answer_class = classes.add(reading.answer)
        seen.append(Seen(candidate.model, k, answer_class, checked=reading.checked))
    return seen


def vote(seen: Sequence[Seen], tools: AnswerTools) -> ToolChoice:
    weights = dict(tools.weights) or {s.model: 1.0 for s in seen}
    chosen = weighted_plurality(seen, weights)
    position = 0 if chosen is None else chosen
    winner = seen[position].answer_class
    if winner == NO_ANSWER:
        return ToolChoice(position, "no answer could be read: the first step it sees")
    agreeing = sum(s.answer_class == winner for s in seen)
    weighted = "weighted " if tools.weights else ""
    return ToolChoice(position, f"{weighted}vote: {agreeing} of {len(seen)} answers agree")


def check(seen: Sequence[Seen]) -> ToolChoice:
    """The first answer that passes its check; when none does, the first step it sees."""
    passing = [i for i, entry in enumerate(seen) if passed(entry)]
    if not passing:
        return ToolChoice(0, "none passed its check: the first step it sees")
    return ToolChoice(passing[0], f"{len(passing)} of {len(seen)} passed: the first of them")


def accept(seen: Sequence[Seen]) -> ToolChoice:
    """Programs that were checked: the first that passes its examples. Any other answers: the
    answer when at least two are seen and all give it. Otherwise the workflow goes on (passing on
    the first step it sees)."""
    if any(entry.checked is not None for entry in seen):
        passing = [i for i, entry in enumerate(seen) if entry.checked]
        if passing:
            return ToolChoice(passing[0], "accepted: it passed its check", ends=True)
        return ToolChoice(0, "not accepted: none passed its check; the workflow goes on")
    classes = {entry.answer_class for entry in seen}
    if len(seen) >= 2 and len(classes) == 1 and NO_ANSWER not in classes:
        return ToolChoice(0, f"accepted: all {len(seen)} answers agree", ends=True)
    if len(seen) < 2:
        why = "one answer confirms nothing"
    else:
        why = "an answer could not be read" if NO_ANSWER in classes else "the answers differ"
    return ToolChoice(0, f"not accepted: {why}; the workflow goes on")


def select(seen: Sequence[Seen], tools: AnswerTools) -> ToolChoice:
    if tools.scorer is None:
        raise ValueError("select needs a scorer")
    scorer = tools.scorer
    chosen, p = best_candidate(seen, scorer.models, np.array(scorer.weights))
    if chosen is None:
        return ToolChoice(0, "no answer could be read: the first step it sees")
    return ToolChoice(chosen, f"scored {p:.2f}")


async def choose(
    tool: str, candidates: Sequence[Candidate], task: Task, tools: AnswerTools
) -> ToolChoice:
    """The candidate `tool` passes on, and why."""
    kind = tools.answer_kind or answer_kind_of(task)
    seen = await read_candidates(candidates, task, kind)
    if tool == "vote":
        return vote(seen, tools)
    if tool == "check":
        return check(seen)
    if tool == "accept":
        return accept(seen)
    if tool == "select":
        return select(seen, tools)
    raise ValueError(f"unknown tool {tool!r}")
