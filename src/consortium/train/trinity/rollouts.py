"""What every optimizer of the TRINITY head shares: building a coordinator from a parameter
vector, scoring vectors on a minibatch with binary rewards, and the training curve."""

from __future__ import annotations

import asyncio
import csv
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from consortium.coord.trinity.encoder import PrecomputedEncoder, StandardizedEncoder
from consortium.coord.trinity.policy import HeadSetup
from consortium.core.errors import ConfigError
from consortium.evaluation.results import TaskResult
from consortium.evaluation.runner import run_policy
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Work
from consortium.runtime.jobs import RemoteJob
from consortium.tasks.base import Grader, Task


def minibatch(tasks: Sequence[Task], size: int, seed: int, step: int) -> list[Task]:
    """The tasks of one generation, the same number from each dataset (so the mix of datasets
    does not move the reward); depends only on (seed, step), so a resumed run sees the same."""
    if size >= len(tasks):
        return list(tasks)
    rng = random.Random(f"{seed}:{step}")
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(task.dataset, []).append(task)
    share, extra = divmod(size, len(groups))
    chosen: list[Task] = []
    for index, name in enumerate(sorted(groups)):
        want = min(share + (index < extra), len(groups[name]))
        chosen += rng.sample(groups[name], want)
    return chosen


async def score_vectors(
    setup: HeadSetup,
    vectors: Sequence[np.ndarray],
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    *,
    sample_seeds: Sequence[int | None],
    concurrency: int = 64,
    name: str = "trinity",
    on_done: Callable[[TaskResult], None] | None = None,
) -> list[list[TaskResult]]:
    """Every vector on every task, all concurrently; results[i][j] is vector i on task j.
    Vector i's rollouts are traced as policy `{name} · candidate {i + 1}`."""
    coordinators = [
        setup.coordinator(v, s, name=f"{name} · candidate {i + 1}")
        for i, (v, s) in enumerate(zip(vectors, sample_seeds, strict=True))
    ]
    return list(
        await asyncio.gather(
            *(
                run_policy(c, tasks, grader, caller, concurrency=concurrency, on_done=on_done)
                for c in coordinators
            )
        )
    )


Candidate = tuple[np.ndarray, int | None]
"""A parameter vector and its sample seed (None: greedy routing)."""


def rollouts_work(
    setup: HeadSetup,
    tasks: Sequence[Task],
    grader: Grader,
    caller: Caller,
    concurrency: int,
    *,
    name: str = "trinity",
    on_done: Callable[[TaskResult], None] | None = None,
) -> Work[Candidate, list[TaskResult]]:
    """Each candidate on every task: in this process all concurrently through `caller` (its
    cache); remotely one job per candidate."""

    async def in_process(candidates: Sequence[Candidate]) -> list[list[TaskResult]]:
        return await score_vectors(
            setup,
            [vector for vector, _ in candidates],
            tasks,
            grader,
            caller,
            sample_seeds=[seed for _, seed in candidates],
            concurrency=concurrency,
            name=name,
            on_done=on_done,
        )

    def remote() -> RemoteJob[Candidate, list[TaskResult]]:
        return RemoteJob.like(caller, CandidateRollouts.of(setup, tasks, grader, concurrency))

    return Work(in_process, remote)


@dataclass(frozen=True)
class CandidateRollouts:
    """A remote job's body: one candidate's rollouts, reading features precomputed for its
    tasks (a worker has no encoder)."""

    setup: HeadSetup
    tasks: list[Task]
    grader: Grader
    concurrency: int = 64

    @classmethod
    def of(
        cls, setup: HeadSetup, tasks: Sequence[Task], grader: Grader, concurrency: int
    ) -> CandidateRollouts:
        if setup.max_turns != 1:
            raise ConfigError(
                "remote rollouts route single-turn only (--max-turns 1); multi-turn transcripts "
                "need the encoder in every worker"
            )
        features = PrecomputedEncoder.of(setup.encoder.encoder, [t.question for t in tasks])
        shipped = replace(setup, encoder=StandardizedEncoder(features, setup.encoder.standardizer))
        return cls(shipped, list(tasks), grader, concurrency)

    async def __call__(self, candidate: Candidate, caller: Caller) -> list[TaskResult]:
        vector, sample_seed = candidate
        return await run_policy(
            self.setup.coordinator(vector, sample_seed),
            self.tasks,
            self.grader,
            caller,
            concurrency=self.concurrency,
        )


def mean_rewards(results: list[list[TaskResult]]) -> np.ndarray:
    return np.array([np.mean([r.grade.correct for r in row]) for row in results])


def write_curve(history: list[dict[str, float]], out_dir: Path, title: str) -> None:
    """curve.csv and curve.png: reward per generation (population mean and best, policy mean)."""
    if not history:
        return
    with (out_dir / "curve.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(history[0]))
        writer.writeheader()
        writer.writerows(history)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 3.5))
    steps = [row["generation"] for row in history]
    for key, label in (
        ("population_mean", "population mean"),
        ("population_best", "best"),
        ("policy", "policy (distribution mean)"),
    ):
        if key in history[0]:
            axis.plot(steps, [row[key] for row in history], label=label)
    axis.set_xlabel("generation")
    axis.set_ylabel("minibatch reward")
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    figure.savefig(out_dir / "curve.png", dpi=110)
    plt.close(figure)
