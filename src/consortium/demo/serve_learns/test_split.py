"""The report's test figures: each policy folder run by `eval` over an HTTP replay server of the
records' test split (`demo.teams.evaluate_folders`), as any folder is measured; and how far the
records runner, which the report's bounds and stream comparisons use, agrees with it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from consortium.demo.teams import evaluate_folders
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.runs import PolicyRun


def over_http(
    records: Path, folders: Sequence[Path], table: OutcomeTable, traces: str
) -> dict[Path, PolicyRun]:
    """Each folder's run on the test split over HTTP, as a run of the table's rows (the test rows
    filled: verdict, $ and calls of each question; the train rows left at zero)."""
    unique = list(dict.fromkeys(folders))
    index = {q: i for i, q in enumerate(table.question_ids)}
    runs = {}
    for folder, results in zip(unique, evaluate_folders(records, unique, traces), strict=True):
        n = table.n_questions
        run = PolicyRun(folder.name, np.zeros(n, bool), np.zeros(n), np.zeros(n), np.zeros(n))
        for result in results:
            row = index[result.task.id]
            run.correct[row] = result.grade.correct
            run.cost[row], run.calls[row], run.tokens[row] = (
                result.cost,
                result.calls,
                result.tokens,
            )
        runs[folder] = run
    return runs


def agreement(http: PolicyRun, played: PolicyRun, test: np.ndarray) -> tuple[int, float]:
    """Test questions where the records runner's verdict differs from the HTTP eval's, and the
    largest difference of $ a question between the two."""
    differing = int((http.correct[test] != played.correct[test]).sum())
    return differing, float(np.abs(http.cost[test] - played.cost[test]).max(initial=0.0))
