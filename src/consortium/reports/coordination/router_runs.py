"""RouterBench's question-only routers on the same splits: kNN and MLP over all-MiniLM-L6-v2
embeddings of the question (consortium.train.trinity.routers), fitted on each model's train verdicts
(first sample); each picks one model per question, which answers once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.runs import PolicyRun, charge, new_run
from consortium.train.trinity.routers import KnnRouter, MlpRouter

KNN_K = 25


def question_features(questions: list[str], cache_dir: Path | None) -> np.ndarray:
    from consortium.coord.trinity.encoder import CachedEncoder, SentenceEncoder

    path = None if cache_dir is None else cache_dir / "question-features.sqlite"
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    encoder = CachedEncoder(SentenceEncoder(), path)
    return np.asarray(encoder.encode(questions))


def router_runs(table: OutcomeTable, features: np.ndarray) -> list[PolicyRun]:
    train = table.indices("train")
    scores = table.first_correct().astype(float)
    picks = {
        f"kNN router (k = {KNN_K}, MiniLM question embedding)": KnnRouter.fit(
            features[train], scores[train], KNN_K
        ).choose(features),
        "MLP router (MiniLM question embedding)": MlpRouter.fit(
            features[train], scores[train]
        ).choose(features),
    }
    runs = []
    for name, chosen in picks.items():
        run = new_run(name, table, "router")
        for q, m in enumerate(chosen):
            samples = table.samples[q][int(m)]
            charge(run, table, q, [(int(m), 0)] if samples else [], samples[0] if samples else None)
        runs.append(run)
    return runs
