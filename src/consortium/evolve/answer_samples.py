"""Answers' agreement on the tuning tasks, measured live: each model's samples of each tuning task,
asked through the round's evaluator (the same pool, traces and grader as every other measurement),
as an outcome table the answer-aware rules can be played on.

Sample 0 of a model is its `single:` run on the tuning batch, which the round measures anyway;
samples 1, 2 … are asked with `seed=k`, as a live answer-aware policy asks them. A model whose
sample k none of the tasks has (a records pool that recorded fewer) is asked no further."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.coord.answers.classes import NO_ANSWER
from consortium.coord.answers.reading import Reading, ReplyReader
from consortium.core.costs import CostMeasure, cost_of
from consortium.evaluation.recorded.outcomes import OutcomeTable, Sample, classes_of
from consortium.evaluation.results import TaskResult
from consortium.evolve.proposal import RoundContext
from consortium.records.schema import AnswerKind
from consortium.tasks.base import Task


@dataclass(frozen=True)
class Answered:
    """One sample: its run (graded by the task set's grader) and how the live policy reads it."""

    result: TaskResult
    reading: Reading


@dataclass(frozen=True)
class LiveSamples:
    """Per tuning task of one cluster and per model, its samples in order (the longest run of
    samples it answered: sample k is only counted when 0 … k−1 were)."""

    cluster: str
    kind: AnswerKind
    models: tuple[str, ...]
    tasks: tuple[Task, ...]
    samples: tuple[tuple[tuple[Answered, ...], ...], ...]
    """samples[q][m]: model m's answered samples of task q, in sample order."""

    def table(self, measure: CostMeasure = "usd") -> OutcomeTable:
        """The samples as an outcome table (every task on the train side), each sample right or
        wrong by the task set's grader, its agreement class and check as the live policy reads
        them; its cost column holds `measure` (what "cheaper" means in this run), whatever its
        name says."""
        reader = ReplyReader(self.kind)
        rows = []
        for per_model in self.samples:
            readings = [s.reading.answer for samples in per_model for s in samples]
            classes = iter(classes_of(readings, reader.key, reader.same))
            rows.append(
                tuple(
                    tuple(_sample(s, next(classes), measure) for s in samples)
                    for samples in per_model
                )
            )
        return OutcomeTable(
            self.cluster,
            self.kind,
            self.models,
            tuple(t.id for t in self.tasks),
            tuple(rows),
            np.zeros(len(self.tasks), dtype=bool),
        )


def _sample(answered: Answered, answer_class: int, measure: CostMeasure) -> Sample:
    checked = answered.reading.checked
    return Sample(
        answer_class,
        answered.result.grade.correct,
        cost_of(answered.result, measure),
        answered.result.tokens,
        answer_class != NO_ANSWER if checked is None else checked,
    )


def _answered(result: TaskResult) -> bool:
    return result.error is None and result.answer is not None


async def live_samples(
    context: RoundContext, cluster: str, kind: AnswerKind, samples: int
) -> LiveSamples:
    """Up to `samples` samples of every model on the cluster's tuning tasks, asked live."""
    tasks = [t for t in context.tuning if t.dataset == cluster]
    singles = await context.singles()
    draws: dict[str, list[Sequence[TaskResult]]] = {}
    for model in context.models:
        by_id = {r.task.id: r for r in singles[model]}
        draws[model] = [[by_id[t.id] for t in tasks]]
        for k in range(1, samples):
            got = await context.evaluator.sample(model, k, tasks, "tuning")
            if not any(_answered(r) for r in got):
                break
            draws[model].append(got)
    reader = ReplyReader(kind)
    rows = []
    for q, task in enumerate(tasks):
        per_model = []
        for model in context.models:
            answered: list[TaskResult] = []
            for draw in draws[model]:
                if not _answered(draw[q]):
                    break
                answered.append(draw[q])
            readings = await reader.read_all(task, [r.answer for r in answered])
            per_model.append(
                tuple(Answered(r, reading) for r, reading in zip(answered, readings, strict=True))
            )
        rows.append(tuple(per_model))
    return LiveSamples(cluster, kind, tuple(context.models), tuple(tasks), tuple(rows))
