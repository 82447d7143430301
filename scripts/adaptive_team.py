"""The served team beside the conductors of `conductor_adaptive.py`: each data set's committed
policy folder `policies/<set>-team` (`make teams`: the answer-aware kind with the best train
accuracy) run over the HTTP replay of its records, and scored as a conductor's workflow is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from consortium.coord.answers.folder import read_policy
from consortium.demo.teams import evaluate_folders
from consortium.train.conductor.mixed_pool import MixedTasks
from consortium.train.conductor.workflow_reward import RIGHT, WRONG, Scored, cost_penalty

LABEL = "served team"


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
        raise SystemExit(f"the served teams did not answer {len(missing)} test question(s)")
    return [found[t] for t in task_ids], kinds


def cached_team_scores(
    test: MixedTasks, task_ids: list[str], policies: Path, folder: Path, cost_weight: float
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """`served_team_scores`, kept in FOLDER/served-team.json (the eval stage reruns cheaply)."""
    path = folder / "served-team.json"
    if path.exists():
        kept = json.loads(path.read_text())
        if kept["task_ids"] == task_ids and kept["cost_weight"] == cost_weight:
            return kept["scores"], kept["kinds"]
    scores, kinds = served_team_scores(test, task_ids, policies, folder, cost_weight)
    rows = [s.__dict__ | {"shape": None} for s in scores]
    path.write_text(
        json.dumps(
            {"task_ids": task_ids, "cost_weight": cost_weight, "scores": rows, "kinds": kinds}
        )
    )
    return rows, kinds
