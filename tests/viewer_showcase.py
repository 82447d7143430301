"""A real evaluation to look at in the viewer (its tests and scripts/viewer_screenshot.py).

Pool: three recorded open models on the replay server, plus a conductor whose plan a test
scripts (a real HTTP server, `tests.scripted_server`; the replay data hold no conductor). The
policies: each model alone, a random router, a TRINITY coordinator whose head is scripted (turn
1 thinker, turn 2 worker, turn 3 verifier, by turn count), the vote template and the conductor.
On replay a Verifier's reply is a recorded answer, so its verdict reads REVISE unless the
recorded text states one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from consortium.coord.base import Coordinator
from consortium.coord.baselines import RandomRouter, SingleModel
from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import WorkflowCoordinator, template
from consortium.coord.trinity.head import ROLES, LinearHead
from consortium.coord.trinity.protocol import TrinityCoordinator
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import parse_pool
from consortium.replay.data import ReplayData
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore

CONDUCTOR = "conductor"
PLAN = (
    "<think>one solves, one checks, one decides</think>\n"
    "model_id = [0, 1, 2]\n"
    "subtasks = ['Solve the problem step by step.', 'Check the solution above for errors.', "
    "'Give the final answer, using the solution and the check.']\n"
    "access_list = [[], [0], 'all']"
)


def conductor_script(_messages: list[dict[str, str]]) -> str:
    return PLAN


class TurnCount:
    """A one-hot of how many turns the transcript already has, so a head can script its turns."""

    name = "turn-count"
    dim = 4

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            rows[i, min(text.count("[Turn "), self.dim - 1)] = 1.0
        return rows


def scripted_trinity(models: list[str]) -> TrinityCoordinator:
    head = LinearHead.zeros(len(models), TurnCount.dim)
    for turn, (model, role) in enumerate([(0, "thinker"), (1, "worker"), (2, "verifier")]):
        head.weights[model, turn] = 5.0
        head.weights[len(models) + ROLES.index(role), turn] = 5.0
    return TrinityCoordinator(head, TurnCount(), models, max_turns=3, name="trinity (scripted)")


def policies(models: list[str]) -> list[Coordinator]:
    return [
        *(SingleModel(m) for m in models),
        RandomRouter(models),
        scripted_trinity(models),
        WorkflowCoordinator(
            template("judge-vote", models), f"workflow:judge-vote:models={','.join(models)}"
        ),
        ConductorCoordinator(CONDUCTOR, models, name=f"conductor:{CONDUCTOR}"),
    ]


async def showcase_run(
    data: ReplayData, replay_url: str, conductor_url: str, path: Path, limit: int
) -> tuple[TraceStore, str]:
    """Every policy on `limit` GSM8K and `limit` MMLU test questions, traced into `path`."""
    recorded = replay_pool(data, replay_url, data.models["split2"][:3])
    entries = [m.model_dump(mode="json", exclude_none=True) for m in recorded.models]
    entries.append({"name": CONDUCTOR, "base_url": conductor_url, "model": CONDUCTOR})
    store = TraceStore(f"sqlite:///{path}")
    tasks = load_replay_tasks(data, datasets=["gsm8k", "mmlu"], limit=limit).tasks
    with store.running("eval", pool="replay (split2, 3 models) + scripted conductor") as run:
        async with Pool(parse_pool({"models": entries})) as pool:
            caller = Caller(pool, store, run.run_id)
            for coordinator in policies(recorded.names):
                await run_policy(coordinator, tasks, ReplayGrader(), caller)
    return store, run.run_id
