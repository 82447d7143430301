"""What the adaptive conductor pipeline (`train.conductor.adaptive`) takes from the replay
plug-in: its mixed pool, every recorded model of several records folders behind one replay
server, and the served team beside its conductors, each data set's committed policy folder
`policies/<set>-team` (`make teams`: the answer-aware kind with the best train accuracy) run over
the HTTP replay of its records and scored as a conductor's workflow is."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from consortium.coord.answers.folder import read_policy
from consortium.core.errors import ConsortiumError
from consortium.demo.teams import evaluate_folders
from consortium.pool.config import PoolConfig
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.train.conductor.mixed_pool import MixedTasks
from consortium.train.conductor.workflow_reward import RIGHT, WRONG, Scored, cost_penalty


@dataclass(frozen=True)
class ReplayedRecords:
    """Every recorded model of `folders` as one pool. `notes`: "none" (the prompt shows "Model k"
    and nothing else) or "names" ("Model k: gpt-4o"): each prompt lists a random subset in a
    random order, so only a name tells the conductor which model a number is."""

    folders: Sequence[str]
    notes: str = "none"

    def pool(self, base_url: str = "http://unused") -> PoolConfig:
        """The pool at `base_url` (the default: for stages that call no worker)."""
        config = replay_pool(load_records_replay(list(self.folders)), base_url, max_retries=0)
        return PoolConfig(
            models=[
                m.model_copy(update={"strengths": m.name if self.notes == "names" else None})
                for m in config.models
            ]
        )

    @contextmanager
    def served(self) -> Iterator[PoolConfig]:
        """The pool behind a replay server of the folders, running while in the block."""
        with ReplayServerProcess(None, records=list(self.folders)) as server:
            yield self.pool(server.base_url)


def served_team_scores(
    test: MixedTasks, task_ids: list[str], policies: Path, scratch: Path, cost_weight: float
) -> tuple[list[Scored], dict[str, str]]:
    """One score per task id (`dataset/question id`), in order, and each set's team kind. The
    team runs on its set's whole test split (its folder's own split) and the subset is picked
    from it, so its figures are the served path's, question by question."""
    tasks = {t.id: t for t in test.tasks}
    found: dict[str, Scored] = {}
    kinds: dict[str, str] = {}
    for name, info in test.sets.items():
        folder = policies / f"{name}-team"
        kinds[name] = read_policy(folder).kind
        traces = f"sqlite:///{scratch / f'{name}-team-traces.db'}"
        (results,) = evaluate_folders(Path(info.folder), [folder], traces)
        for result in results:
            task_id = f"{name}/{result.task.id}"
            if task_id not in tasks:
                continue
            right = result.grade.correct
            penalty = cost_penalty(tasks[task_id], result.cost, cost_weight)
            found[task_id] = Scored(
                (RIGHT if right else WRONG) - penalty,
                result.error is None,
                right,
                result.cost,
                result.calls,
            )
    missing = [t for t in task_ids if t not in found]
    if missing:
        raise ConsortiumError(f"the served teams did not answer {len(missing)} test question(s)")
    return [found[t] for t in task_ids], kinds
