"""The answer-aware headline of one records folder, quick enough for the demo: the best single model
(chosen on train), the vote weighted by train accuracy, the learned answer scorer over every model
and the scorer cascade that matches the vote for less, each on the test split with a paired
bootstrap interval against the best single model. Nothing here trains for long: the scorer is a
logistic regression fitted on the train split in seconds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from consortium.coordinate import baselines
from consortium.coordinate.outcomes import OutcomeTable
from consortium.coordinate.runs import PolicyRun, train_accuracy
from consortium.coordinate.scorer import cascade_matching_the_vote, scorer_vote
from consortium.coordinate.selection import Interval, paired_bootstrap
from consortium.coordinate.tables import outcome_table
from consortium.records.store import load_records

DECLARED = (
    "Pool: replay of recorded outputs of real models (records folders), simulated in process; "
    "every policy reads each model's first recorded sample. Split: sha256 of "
    "'dataset/question_id', 50/50; the best single model, the vote's weights, the scorer and the "
    "cascade's τ come from the train split; figures are on the test split."
)


@dataclass(frozen=True)
class HeadlineRow:
    policy: str
    accuracy: float
    vs_best_single: Interval
    usd_per_question: float
    cost_vs_best_single: float
    calls_per_question: float


@dataclass(frozen=True)
class Headline:
    dataset: str
    test_questions: int
    rows: list[HeadlineRow]


def headline(table: OutcomeTable) -> Headline:
    test = table.indices("test")
    best = baselines.single(table, int(np.argmax(train_accuracy(table))))
    best.name = f"best single model (train): {best.name}"
    vote = baselines.weighted_vote(table)
    runs = [best, vote, scorer_vote(table)]
    matching = cascade_matching_the_vote(table, vote)[1]
    runs += [matching] if matching else []
    best_cost = float(best.cost[test].mean()) or 1.0

    def row(run: PolicyRun) -> HeadlineRow:
        return HeadlineRow(
            run.name,
            100 * float(run.correct[test].mean()),
            paired_bootstrap(run.correct[test], best.correct[test]),
            float(run.cost[test].mean()),
            float(run.cost[test].mean()) / best_cost,
            float(run.calls[test].mean()),
        )

    return Headline(table.dataset, len(test), [row(run) for run in runs])


def headline_of_folder(folder: Path, cache_dir: Path | None = None) -> Headline:
    """`cache_dir` keeps the code checks' sandbox runs (code data sets only)."""
    return headline(outcome_table(load_records(folder), cache_dir))


COLUMNS = ("policy", "acc %", "Δ vs best single [95% CI]", "$ / question", "$ vs best", "calls")


def cells(row: HeadlineRow) -> tuple[str, ...]:
    return (
        row.policy,
        f"{row.accuracy:.2f}",
        row.vs_best_single.text(),
        f"{row.usd_per_question:.5f}",
        f"{100 * row.cost_vs_best_single:.1f} %",
        f"{row.calls_per_question:.2f}",
    )


def headline_markdown(result: Headline) -> str:
    lines = [
        f"## {result.dataset}: answer-aware team on recorded outputs "
        f"({result.test_questions} test questions)",
        "",
        DECLARED,
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in result.rows]
    return "\n".join(lines) + "\n"
