"""The routers the TRINITY report (`demo.trinity_eval`) puts beside the trained policy on the
RouterDC protocol: TRINITY variants, kNN and MLP routers, the per-dataset best and random routing,
fitted on the training questions and scored on the test questions in process."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from consortium.coord.trinity.encoder import CachedEncoder, Standardizer
from consortium.replay.data import ReplayData
from consortium.replay.protocol import ProtocolRow, row_from_choices, score_matrix
from consortium.replay.tasks import ID_DATASETS, OOD_DATASETS, load_replay_tasks
from consortium.tasks.base import Task
from consortium.train.trinity.recorded import RoutingProblem
from consortium.train.trinity.routers import KnnRouter, MlpRouter, PerDatasetBest, random_choices
from consortium.train.trinity.routing import encode_all, fit_head
from consortium.train.trinity.settings import RouterTraining

CLOSEST_ID = {"math_prealgebra": "gsm8k", "mbpp": "humaneval", "ceval": "cmmlu"}
"""What PerDatasetBest uses for an OOD set (it has no training split): the nearest ID set."""


def features(cache: CachedEncoder, tasks: Sequence[Task], label: str) -> np.ndarray:
    started = time.perf_counter()
    done = 0

    def show(n: int) -> None:
        nonlocal done
        done += n
        print(f"  {label}: {done}/{len(tasks)} encoded", end="\r", flush=True)

    result = encode_all(cache, [t.question for t in tasks], show)
    print(f"  {label}: {len(tasks)} in {time.perf_counter() - started:.0f} s" + " " * 20)
    return result


class Variants:
    """Routers fitted on the training questions, scored on the test questions (in process)."""

    def __init__(
        self,
        train: Sequence[Task],
        test: Sequence[Task],
        models: list[str],
        raw_train: np.ndarray,
        raw_test: np.ndarray,
    ) -> None:
        self.train, self.test, self.models = train, test, models
        self.raw_train, self.raw_test = raw_train, raw_test
        self.scores_train = score_matrix(train, models)
        self.scores_test = score_matrix(test, models)
        self.datasets_train = np.array([t.dataset for t in train])

    def problems(
        self, components: int | None, constant: bool
    ) -> tuple[RoutingProblem, RoutingProblem]:
        standardizer = Standardizer.fit(self.raw_train, components, constant=constant)
        test_datasets = np.array([t.dataset for t in self.test])
        return (
            RoutingProblem(
                standardizer.apply(self.raw_train), self.scores_train, self.datasets_train
            ),
            RoutingProblem(standardizer.apply(self.raw_test), self.scores_test, test_datasets),
        )

    def trinity(self, name: str, training: RouterTraining) -> ProtocolRow:
        problem, held_out = self.problems(training.components, training.constant)
        run, _ = fit_head(problem, training)
        return self.row(f"{name} [{problem.n_params:,} weights]", held_out.choices(run.vector))

    def row(self, name: str, choices: np.ndarray, note: str = "") -> ProtocolRow:
        return row_from_choices(name, self.test, self.scores_test, choices, note=note)

    def baselines(self, seed: int) -> list[ProtocolRow]:
        per_dataset = PerDatasetBest.fit(self.scores_train, self.datasets_train, CLOSEST_ID)
        return [
            self.row(
                "kNN router (k=200)",
                KnnRouter.fit(self.raw_train, self.scores_train, 200).choose(self.raw_test),
            ),
            self.row(
                "MLP router",
                MlpRouter.fit(self.raw_train, self.scores_train, seed=seed).choose(self.raw_test),
            ),
            self.row(
                "train split's best model per dataset",
                per_dataset.choose([t.dataset for t in self.test]),
                note="given the dataset label; OOD: the closest ID set's",
            ),
            self.row("random", random_choices(len(self.test), len(self.models), seed)),
        ]


def load_tasks(
    data: ReplayData, limit: int, seed: int, train_limit: int = 0
) -> tuple[list[Task], list[Task]]:
    train = load_replay_tasks(
        data, datasets=ID_DATASETS, split="train", limit=train_limit or None, seed=seed
    ).tasks
    test = load_replay_tasks(
        data,
        datasets=[*ID_DATASETS, *OOD_DATASETS],
        split="test",
        limit=limit or None,
        seed=seed,
    ).tasks
    return train, test
