"""Answer-aware policies served: what a policy adds beyond its calls, and how it fares when its
endpoints fail.

    python bench/answer_policies.py --records records/math --records records/date

Overhead: each kind (fitted on the folder's train split) answers the test questions through a
caller that returns the recorded text at once, so the wall time of `coordinator.run` is the
policy's own work (deciding, reading each answer with the grader's extractor, classifying);
p50 / p95 in ms per question, beside `single` (one call, no reading) as the baseline, and the
ratio. Faults: the same policies over the HTTP replay server of the records, once clean and once
with `--fault-rate` of requests failed (HTTP 500/503/429, a declared simulation of the replay
server); per question, an answer that differs from the clean run's with no failed call noted is
a wrong answer caused by a fault (must be 0), a task that ended in an error is lost (must be 0).
Pool: replay of recorded outputs of real models.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consortium.coord.answers.folder import load_answer_policy, write_policy
from consortium.core.errors import AgentError
from consortium.core.types import Completion, Usage
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.records.split import split_of
from consortium.records.store import load_records
from consortium.replay.launch import ReplayServerProcess
from consortium.tasks.base import Task
from consortium.train.answers.best_kind import candidate_kinds
from consortium.train.answers.policy import fit_answer_policy


class RecordedCaller:
    """A caller answering with the recorded sample `seed` of (question, model), at once."""

    def __init__(self, samples: dict[tuple[str, str, int], str]) -> None:
        self.samples = samples

    async def call(self, model: str, messages: Sequence[Any], **params: Any) -> Completion:
        key = (messages[-1]["content"], model, int(params.get("seed", 0)))
        if key not in self.samples:
            raise AgentError(model, "samples exhausted", status=404)
        return Completion(self.samples[key], model, Usage())

    async def trace_stages(self, stages: Sequence[Any]) -> None:
        """Stages are not stored here: the timing is the policy's, not the store's."""


def overhead(folder: Path, rounds: int) -> list[tuple[str, float, float]]:
    records = load_records(folder)
    rows = records.table.select(["question_id", "question", "model", "sample", "response"])
    samples = {
        (r["question"], r["model"], r["sample"]): r["response"] or "" for r in rows.to_pylist()
    }
    dataset = records.manifest.dataset
    tasks = {
        r["question_id"]: Task(r["question_id"], r["question"], dataset, "test")
        for r in rows.to_pylist()
        if split_of(dataset, r["question_id"]) == "test"
    }
    caller = RecordedCaller(samples)
    figures = []
    with tempfile.TemporaryDirectory() as scratch:
        for kind in candidate_kinds(records.manifest.answer_kind):
            write_policy(Path(scratch) / kind, fit_answer_policy(kind, folder).policy)
            coordinator = load_answer_policy(Path(scratch) / kind)
            times: list[float] = []
            for _ in range(rounds):
                times += asyncio.run(_timed(coordinator, list(tasks.values()), caller))
            quantiles = statistics.quantiles(times, n=20)
            figures.append((kind, statistics.median(times), quantiles[18]))
    return figures


async def _timed(coordinator: Any, tasks: list[Task], caller: RecordedCaller) -> list[float]:
    times = []
    for task in tasks:
        started = time.perf_counter()
        await coordinator.run(task, caller)
        times.append(1000 * (time.perf_counter() - started))
    return times


def faults(folder: Path, rate: float) -> list[tuple[str, int, int, int, int]]:
    """Per kind: questions, answers changed with a failure noted, changed silently, lost."""
    out = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        policies = []
        kinds = candidate_kinds(load_records(folder).manifest.answer_kind)
        for kind in kinds:
            write_policy(root / kind, fit_answer_policy(kind, folder).policy)
            policies.append(str(root / kind))
        runs = []
        for name, extra in (
            ("clean", []),
            ("faulty", ["--error-rate", str(rate), "--fault-seed", "1"]),
        ):
            pool = root / f"{name}.toml"
            with ReplayServerProcess(None, "--write-pool", str(pool), *extra, records=[folder]):
                runs.append(
                    run_evaluation(
                        EvalConfig(
                            pool,
                            f"records:path={folder}:split=test",
                            tuple(policies),
                            baselines=False,
                            traces=f"sqlite:///{root / name}.db",
                        )
                    )
                )
        clean, faulty = runs
        for kind, name in zip(kinds, clean.per_policy, strict=True):
            before = {r.task.id: r for r in clean.per_policy[name]}
            noted = silent = lost = 0
            for result in faulty.per_policy[name]:
                if result.error is not None or result.outcome is None:
                    lost += 1
                    continue
                clean_run = before[result.task.id]
                if result.answer != clean_run.answer:
                    # failures of this run only (a sample past the records' last fails in both)
                    usual = set(clean_run.outcome.notes if clean_run.outcome else ())
                    failed = [n for n in result.outcome.notes if n not in usual]
                    noted, silent = (noted + 1, silent) if failed else (noted, silent + 1)
            out.append((kind, len(before), noted, silent, lost))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, action="append", required=True)
    parser.add_argument("--rounds", type=int, default=3, help="overhead: passes over the test")
    parser.add_argument("--fault-rate", type=float, default=0.3)
    args = parser.parse_args()
    for folder in args.records:
        print(f"## {folder} — overhead per question (ms; calls answered at once)")
        figures = overhead(folder, args.rounds)
        base = next(p50 for kind, p50, _ in figures if kind == "single")
        for kind, p50, p95 in figures:
            print(f"  {kind:15s} p50 {p50:7.3f}  p95 {p95:7.3f}  p50 / single's {p50 / base:5.1f}")
        print(f"## {folder} — {args.fault_rate:.0%} of requests failed (HTTP replay)")
        for kind, total, noted, silent, lost in faults(folder, args.fault_rate):
            print(
                f"  {kind:15s} {total} questions: {noted} answers changed with the failure "
                f"noted, {silent} changed silently, {lost} lost"
            )


if __name__ == "__main__":
    main()
