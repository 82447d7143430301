"""Baseline routers learned from recorded outcomes: each fits (features, scores) of training
questions and picks one model per new question. They are the comparison rows of the routing
report beside the TRINITY head.

- `PerDatasetBest`: the training split's best model for each dataset. It is given the dataset
  label of every question, which no other router sees.
- `KnnRouter`: RouterBench's baseline: the k nearest training questions by cosine similarity,
  the model with the best mean score among them.
- `MlpRouter`: a one-hidden-layer network (PyTorch) regressing every model's score from the
  features; the model with the best predicted score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class PerDatasetBest:
    best: dict[str, int]
    fallback: int

    @classmethod
    def fit(
        cls, scores: np.ndarray, datasets: np.ndarray, aliases: dict[str, str] | None = None
    ) -> PerDatasetBest:
        """`aliases` maps a dataset without training questions to one that has them (e.g. an
        out-of-distribution set to its closest in-distribution one)."""
        best = {
            str(d): int(scores[datasets == d].mean(axis=0).argmax()) for d in np.unique(datasets)
        }
        for name, like in (aliases or {}).items():
            best.setdefault(name, best[like])
        return cls(best, int(scores.mean(axis=0).argmax()))

    def choose(self, datasets: Sequence[str]) -> np.ndarray:
        return np.array([self.best.get(str(d), self.fallback) for d in datasets])


@dataclass
class KnnRouter:
    neighbours: np.ndarray
    scores: np.ndarray
    k: int = 200

    @classmethod
    def fit(cls, features: np.ndarray, scores: np.ndarray, k: int = 200) -> KnnRouter:
        return cls(_unit(features), scores, min(k, len(features)))

    def choose(self, features: np.ndarray, chunk: int = 2048) -> np.ndarray:
        picks = []
        for start in range(0, len(features), chunk):
            similarity = _unit(features[start : start + chunk]) @ self.neighbours.T
            nearest = np.argpartition(-similarity, self.k - 1, axis=1)[:, : self.k]
            picks.append(self.scores[nearest].mean(axis=1).argmax(axis=1))
        return np.concatenate(picks) if picks else np.zeros(0, dtype=int)


@dataclass
class MlpRouter:
    network: object
    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(
        cls,
        features: np.ndarray,
        scores: np.ndarray,
        *,
        hidden: int = 128,
        epochs: int = 60,
        weight_decay: float = 1e-3,
        seed: int = 0,
    ) -> MlpRouter:
        import torch

        torch.manual_seed(seed)
        mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-6
        inputs = torch.tensor((features - mean) / scale, dtype=torch.float32)
        targets = torch.tensor(scores, dtype=torch.float32)
        network = torch.nn.Sequential(
            torch.nn.Linear(inputs.shape[1], hidden),
            torch.nn.ReLU(),
            torch.nn.Dropout(0.2),
            torch.nn.Linear(hidden, scores.shape[1]),
        )
        optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3, weight_decay=weight_decay)
        generator = torch.Generator().manual_seed(seed)
        for _ in range(epochs):
            for batch in torch.randperm(len(inputs), generator=generator).split(128):
                optimizer.zero_grad()
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    network(inputs[batch]), targets[batch]
                )
                loss.backward()
                optimizer.step()
        network.eval()
        return cls(network, mean, scale)

    def choose(self, features: np.ndarray) -> np.ndarray:
        import torch

        assert isinstance(self.network, torch.nn.Module)
        with torch.no_grad():
            logits = self.network(
                torch.tensor((features - self.mean) / self.scale, dtype=torch.float32)
            )
        result: np.ndarray = logits.argmax(dim=1).numpy()
        return result


def random_choices(n_tasks: int, n_models: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_models, n_tasks)


def _unit(features: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    result: np.ndarray = features / np.maximum(norms, 1e-12)
    return result
