"""What every optimizer of the TRINITY head shares: building a coordinator from a parameter
vector, scoring vectors on a minibatch with binary rewards, and the training curve."""

from __future__ import annotations

import asyncio
import csv
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from consortium.config import PoolConfig
from consortium.coord.trinity.encoder import PrecomputedEncoder, StandardizedEncoder
from consortium.coord.trinity.policy import HeadSetup
from consortium.errors import ConfigError
from consortium.evaluate import TaskResult, run_policy
from consortium.pool import Pool
from consortium.runtime.caller import Caller
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
) -> list[list[TaskResult]]:
    """Every vector on every task, all concurrently; results[i][j] is vector i on task j."""
    coordinators = [setup.coordinator(v, s) for v, s in zip(vectors, sample_seeds, strict=True)]
    return list(
        await asyncio.gather(
            *(run_policy(c, tasks, grader, caller, concurrency=concurrency) for c in coordinators)
        )
    )


@dataclass(frozen=True)
class RemoteRollouts:
    """One candidate's rollouts as a self-contained job for an executor: it opens its own pool
    from the configuration and reads features precomputed for its tasks."""

    pool: PoolConfig
    setup: HeadSetup
    tasks: list[Task]
    grader: Grader
    concurrency: int = 64

    @classmethod
    def of(
        cls,
        setup: HeadSetup,
        tasks: Sequence[Task],
        grader: Grader,
        caller: Caller,
        concurrency: int,
    ) -> RemoteRollouts:
        if setup.max_turns != 1:
            raise ConfigError(
                "remote rollouts route single-turn only (--max-turns 1); multi-turn transcripts "
                "need the encoder in every worker"
            )
        features = PrecomputedEncoder.of(setup.encoder.encoder, [t.question for t in tasks])
        shipped = replace(setup, encoder=StandardizedEncoder(features, setup.encoder.standardizer))
        return cls(caller.pool.config, shipped, list(tasks), grader, concurrency)

    def __call__(self, job: tuple[np.ndarray, int | None]) -> list[bool]:
        return asyncio.run(self._run(*job))

    async def _run(self, vector: np.ndarray, sample_seed: int | None) -> list[bool]:
        async with Pool(self.pool) as pool:
            results = await run_policy(
                self.setup.coordinator(vector, sample_seed),
                self.tasks,
                self.grader,
                Caller(pool, None, "rollouts"),
                concurrency=self.concurrency,
            )
        return [r.grade.correct for r in results]


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
