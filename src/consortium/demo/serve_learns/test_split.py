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
from consortium.evaluation.results import TaskResult


def over_http(
    records: Path, folders: Sequence[Path], table: OutcomeTable, traces: str
) -> dict[Path, PolicyRun]:
    """Each folder's run on the test split over HTTP, as a run of the table's rows (the test rows
    filled: verdict, $ and calls of each question; the train rows left at zero). Folders holding
    the same policy are run once; each is run on its own, as two different policies may share a
    name (an eval keys its results by name)."""
    runs: dict[str, PolicyRun] = {}
    keys = {folder: (folder / "policy.json").read_text(encoding="utf-8") for folder in folders}
    for folder, key in keys.items():
        if key not in runs:
            [results] = evaluate_folders(records, [folder], traces)
            runs[key] = _run_of(folder.name, results, table)
    return {folder: runs[key] for folder, key in keys.items()}


def _run_of(name: str, results: Sequence[TaskResult], table: OutcomeTable) -> PolicyRun:
    index = {q: i for i, q in enumerate(table.question_ids)}
    n = table.n_questions
    run = PolicyRun(name, np.zeros(n, bool), np.zeros(n), np.zeros(n), np.zeros(n))
    for result in results:
        row = index[result.task.id]
        run.correct[row] = result.grade.correct
        run.cost[row], run.calls[row] = result.cost, result.calls
        run.tokens[row] = result.tokens
    return run


def agreement(http: PolicyRun, played: PolicyRun, test: np.ndarray) -> tuple[int, float]:
    """Test questions where the records runner's verdict differs from the HTTP eval's, and the
    largest difference of $ a question between the two."""
    differing = int((http.correct[test] != played.correct[test]).sum())
    return differing, float(np.abs(http.cost[test] - played.cost[test]).max(initial=0.0))
