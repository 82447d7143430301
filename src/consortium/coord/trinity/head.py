"""The head: z = W·h, no bias, no activation; W has one row per model and one per role.

The model logits and the role logits are separate groups, each with its own softmax, so the model
and the role are two categorical choices. Sampled in training, argmax at evaluation by default.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ROLES = ("worker", "thinker", "verifier")
"""The role rows, in the order of the paper's code: solver (= Worker), thinker, verifier."""


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max())
    result: np.ndarray = shifted / shifted.sum()
    return result


@dataclass
class LinearHead:
    weights: np.ndarray
    """Shape (n_models + 3, dim)."""
    n_models: int

    @classmethod
    def zeros(cls, n_models: int, dim: int) -> LinearHead:
        return cls(np.zeros((n_models + len(ROLES), dim), dtype=np.float64), n_models)

    @classmethod
    def from_vector(cls, vector: np.ndarray, n_models: int, dim: int) -> LinearHead:
        return cls(
            np.asarray(vector, dtype=np.float64).reshape(n_models + len(ROLES), dim), n_models
        )

    def to_vector(self) -> np.ndarray:
        return self.weights.reshape(-1).copy()

    @property
    def dim(self) -> int:
        return int(self.weights.shape[1])

    @property
    def n_params(self) -> int:
        return int(self.weights.size)

    def probabilities(
        self, feature: np.ndarray, roles: tuple[str, ...] = ROLES
    ) -> tuple[np.ndarray, np.ndarray]:
        """The model softmax and the role softmax, roles outside `roles` at probability 0."""
        logits = self.weights @ feature
        role_logits = logits[self.n_models :].copy()
        role_logits[[i for i, name in enumerate(ROLES) if name not in roles]] = -np.inf
        return softmax(logits[: self.n_models]), softmax(role_logits)

    def choose(
        self,
        feature: np.ndarray,
        rng: np.random.Generator | None = None,
        roles: tuple[str, ...] = ROLES,
    ) -> tuple[int, int, float]:
        """(model index, role index, confidence): sampled when `rng` is given, else argmax.

        Roles outside `roles` are masked out. Confidence is the probability of the chosen model
        times that of the chosen role.
        """
        p_model, p_role = self.probabilities(feature, roles)
        if rng is None:
            model, role = int(np.argmax(p_model)), int(np.argmax(p_role))
        else:
            model = int(rng.choice(len(p_model), p=p_model))
            role = int(rng.choice(len(p_role), p=p_role))
        return model, role, float(p_model[model] * p_role[role])
