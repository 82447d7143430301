"""Rollouts of the TRINITY head on the records simulation, for training: greedy (the decision
function as deployed: `Episodes.play`) or sampled from the same softmaxes (REINFORCE), with the
score-function gradient of the sampled choices. The head itself is
`consortium.coord.answers.trinity_turns.TrinityTurns`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from consortium.coord.answers.rules import Submit
from consortium.coord.answers.stages import MAX_DECISIONS
from consortium.evaluation.recorded.episodes import Episodes, Transcript


@dataclass(frozen=True)
class Rollout:
    transcript: Transcript
    correct: bool
    gradient: np.ndarray | None


def n_weights(episodes: Episodes) -> int:
    return episodes.n_weights


def rollout(
    episodes: Episodes,
    weights: np.ndarray,
    q: int,
    rng: np.random.Generator | None = None,
    gradient: bool = False,
) -> Rollout:
    """One run of question q; `rng` None: greedy; else sampled (with the gradient if asked)."""
    rule = episodes.rule(weights)
    if rng is None:
        t = episodes.play(rule, q)
        return Rollout(t, episodes.correct(t), None)
    n_models = episodes.n_models
    grad = np.zeros_like(rule.weights) if gradient else None
    t = episodes.start(q)
    reader = episodes.reader(q)
    for _ in range(MAX_DECISIONS):
        choice = rule.choose(t.log, reader, rng)
        if grad is not None and choice.features is not None:
            assert choice.p_model is not None and choice.p_action is not None
            one_model = -choice.p_model
            one_model[choice.model_index] += 1.0
            one_action = -choice.p_action
            one_action[choice.action_index] += 1.0
            grad[:n_models] += np.outer(one_model, choice.features)
            grad[n_models:] += np.outer(one_action, choice.features)
        if isinstance(choice.decision, Submit):
            t.submitted = choice.decision
            break
        episodes.apply(t, choice.decision)
    return Rollout(t, episodes.correct(t), None if grad is None else grad.ravel())
