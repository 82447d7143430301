"""The multi-turn protocol: each turn the head picks (model, role) from the transcript's feature;
the agent sees the query plus the whole transcript under a role prompt. Stop at the first
Verifier ACCEPT, else after `max_turns`.

The paper returns the last turn's output O_τ, which on acceptance restates the endorsed answer.
Here the endorsed answer is returned verbatim: the latest Worker output (the last output when no
Worker spoke), so graders always read an answer and never a verdict.
"""

from __future__ import annotations

import numpy as np

from consortium.coord.base import Outcome
from consortium.coord.trinity.encoder import Encoder
from consortium.coord.trinity.head import ROLES, LinearHead
from consortium.coord.trinity.turns import TurnRecord
from consortium.core.answers import parse_verdict
from consortium.core.errors import CoordinatorError
from consortium.core.types import Message, system, user
from consortium.runtime.caller import TaskCaller
from consortium.tasks.base import Task

ROLE_PROMPTS = {
    "worker": (
        "You are the Worker in a team of models. Solve the task directly and completely: give the "
        "derivation, code or number it asks for. Use the team's earlier turns where they help. "
        "End with 'The answer is …'."
    ),
    "thinker": (
        "You are the Thinker in a team of models. Do not write the final solution. Give a plan, a "
        "decomposition or a critique of the work so far, in a few sentences. You may name who "
        "should act next with <suggested_role>worker</suggested_role> or "
        "<suggested_role>verifier</suggested_role>."
    ),
    "verifier": (
        "You are the Verifier in a team of models. Check whether the latest answer in the work so "
        "far is correct and complete and answers the task. Reply 'VERDICT: ACCEPT' or "
        "'VERDICT: REVISE', then a one-paragraph diagnosis."
    ),
}


def transcript_text(question: str, turns: list[TurnRecord]) -> str:
    """What the coordinator reads: the query and every earlier output, with its role."""
    parts = [question]
    parts += [f"[Turn {t.index} · {t.role}]\n{t.output}" for t in turns]
    return "\n\n".join(parts)


def role_messages(role: str, question: str, turns: list[TurnRecord]) -> list[Message]:
    messages = [system(ROLE_PROMPTS[role]), user(question)]
    if turns:
        earlier = "\n\n".join(f"[Turn {t.index} · {t.role}]\n{t.output}" for t in turns)
        messages.append(user(f"Work so far:\n\n{earlier}"))
    return messages


class TrinityCoordinator:
    def __init__(
        self,
        head: LinearHead,
        encoder: Encoder,
        models: list[str],
        *,
        max_turns: int = 5,
        roles: tuple[str, ...] = ROLES,
        center: np.ndarray | None = None,
        sample_seed: int | None = None,
        name: str = "trinity",
    ) -> None:
        if head.n_models != len(models):
            raise CoordinatorError(
                f"head has {head.n_models} model rows, pool has {len(models)} models"
            )
        if head.dim != encoder.dim:
            raise CoordinatorError(
                f"head reads {head.dim}-d features, encoder gives {encoder.dim}-d"
            )
        if not set(roles) <= set(ROLES) or "worker" not in roles:
            raise CoordinatorError(f"roles must include worker and be among {ROLES}")
        self.head = head
        self.encoder = encoder
        self.models = models
        self.max_turns = max_turns
        self.roles = roles
        self.center = center
        self.sample_seed = sample_seed
        self.name = name

    def feature(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encoder.encode([text])[0].astype(np.float64)
        return vector - self.center if self.center is not None else vector

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        rng = (
            np.random.default_rng([self.sample_seed, *task.id.encode()])
            if self.sample_seed is not None
            else None
        )
        turns: list[TurnRecord] = []
        for index in range(1, self.max_turns + 1):
            feature = self.feature(transcript_text(task.question, turns))
            model_index, role_index, confidence = self.head.choose(feature, rng, self.roles)
            model, role = self.models[model_index], ROLES[role_index]
            completion = await caller.call(
                model,
                role_messages(role, task.question, turns),
                role=role,
                turn=index,
                verdict_of=parse_verdict if role == "verifier" else None,
            )
            verdict = parse_verdict(completion.text) if role == "verifier" else None
            turns.append(
                TurnRecord(
                    index,
                    model,
                    role,
                    completion.text,
                    verdict,
                    confidence,
                    model_index,
                    role_index,
                    feature,
                )
            )
            if verdict == "ACCEPT":
                break
        workers = [t for t in turns if t.role == "worker"]
        answer = (workers or turns)[-1].output
        return Outcome(
            answer,
            turns=tuple(turns),
            accepted=turns[-1].verdict == "ACCEPT",
            confidence=float(min(t.confidence for t in turns)),
        )
