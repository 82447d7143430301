"""The TRINITY head on transcript features: z = W·x with W of shape (models + roles) × features,
no bias (the features carry a constant), two separate softmaxes (model, role), as in the paper.
Rollouts: greedy (argmax, what is deployed and scored) or sampled (REINFORCE), with the
score-function gradient of the sampled choices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from consortium.coordinate.episodes import ROLES, Episodes, Transcript


@dataclass(frozen=True)
class Rollout:
    transcript: Transcript
    correct: bool
    gradient: np.ndarray | None


def _softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, logits, -np.inf)
    z = z - z[mask].max()
    p = np.exp(z)
    out: np.ndarray = p / p.sum()
    return out


def n_weights(episodes: Episodes) -> int:
    return (episodes.n_models + len(ROLES)) * episodes.n_features


def rollout(
    episodes: Episodes,
    weights: np.ndarray,
    q: int,
    rng: np.random.Generator | None = None,
    gradient: bool = False,
) -> Rollout:
    """One run of question q; `rng` None: greedy; else sampled (with the gradient if asked)."""
    n_models = episodes.n_models
    w = weights.reshape(n_models + len(ROLES), episodes.n_features)
    grad = np.zeros_like(w) if gradient else None
    t = episodes.start(q)
    while not episodes.done(t):
        x = episodes.features(t)
        z = w @ x
        model_mask = episodes.available(t)
        if episodes.code:
            model_mask = model_mask | True  # a code Verifier calls no model
        role_mask = episodes.role_mask(t)
        p_model = _softmax(z[:n_models], model_mask)
        p_role = _softmax(z[n_models:], role_mask)
        if rng is None:
            model = int(np.argmax(p_model))
            role = int(np.argmax(p_role))
        else:
            model = int(rng.choice(n_models, p=p_model))
            role = int(rng.choice(len(ROLES), p=p_role))
        if episodes.code and role == 0 and not episodes.available(t)[model]:
            available = np.flatnonzero(episodes.available(t))
            model = int(available[np.argmax(p_model[available])])
        if grad is not None:
            one_model = -p_model
            one_model[model] += 1.0
            one_role = -p_role
            one_role[role] += 1.0
            grad[:n_models] += np.outer(one_model, x)
            grad[n_models:] += np.outer(one_role, x)
        episodes.step(t, model, role)
    return Rollout(t, episodes.correct(t), None if grad is None else grad.ravel())
