"""The evaluation stage of the adaptive pipeline: greedy workflows of each conductor on the test
subset, scored beside the baselines (the best single model, the vote, the fixed workflows, one
fixed workflow per set picked on train, the served team) through the same executor, replay and
grader."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

from consortium.pool.config import PoolConfig
from consortium.smallmodels.files import sha256_of
from consortium.train.conductor.adaptive.families import LABEL as REACHABLE
from consortium.train.conductor.adaptive.families import picked_texts, reward_of, train_picks
from consortium.train.conductor.adaptive.request import say
from consortium.train.conductor.adaptive.work import Work
from consortium.train.conductor.grpo import last_complete_checkpoint
from consortium.train.conductor.measure import baseline_workflows
from consortium.train.conductor.mixed_pool import MixedTasks
from consortium.train.conductor.rejection_sft import last_round
from consortium.train.conductor.workflow_reward import Scored
from consortium.train.conductor.workflow_sampling import Sampler

TEAM = "served team"


class TeamScores(Protocol):
    """Each test task's score by its set's served team (`policies/<set>-team`), in `task_ids`'
    order, and each set's team kind; `scratch` holds the runs' traces."""

    def __call__(
        self,
        test: MixedTasks,
        task_ids: list[str],
        policies: Path,
        scratch: Path,
        cost_weight: float,
    ) -> tuple[list[Scored], dict[str, str]]: ...


def scored_json(scores: list[Scored]) -> list[dict[str, Any]]:
    return [s.__dict__ | {"shape": list(s.shape) if s.shape else None} for s in scores]


def scored_from(rows: list[dict[str, Any]]) -> list[Scored]:
    return [Scored(**(r | {"shape": tuple(r["shape"]) if r["shape"] else None})) for r in rows]


def trained_model(out: Path, method: str) -> Path | None:
    """A run's final model, or (a run stopped early) its last complete checkpoint or round."""
    if (out / "model" / "config.json").is_file():
        return out / "model"
    if method == "rft":
        done = last_round(out)
        return out / f"round-{done}" if done else None
    return last_complete_checkpoint(out / "checkpoints") if out.is_dir() else None


def conductors(work: Work) -> dict[str, str]:
    """The conductors to evaluate, by label: the base, the warm start and each trained one
    (those `evaluate` names, when it names some)."""
    found = {"base": work.base, "warm start": str(work.warm_dir)}
    for cost_weight in work.request.cost_weights:
        for method in work.request.method_names:
            model = trained_model(work.root / f"{method}-l{cost_weight:g}", method)
            if model is not None:
                found[f"{method.upper()} λ={cost_weight:g}"] = str(model)
    chosen = work.request.evaluate
    if chosen == "all":
        return found
    names = {name.strip() for name in chosen.split(",")}
    return {label: model for label, model in found.items() if label in names}


def weights_digest(model: str) -> str:
    """The first 12 hex digits of the sha256 over a model folder's weight files: a folder
    retrained under the same label gets new greedy texts, not the old ones."""
    digest = hashlib.sha256()
    for weights in sorted(Path(model).glob("*.safetensors")):
        digest.update(sha256_of(weights).encode())
    return digest.hexdigest()[:12]


def _greedy_texts(work: Work, rows: list[dict[str, Any]], folder: Path) -> dict[str, list[str]]:
    """Each conductor's greedy workflow per row, kept per conductor, weights and test prompts."""
    texts: dict[str, list[str]] = {}
    prompts = hashlib.sha256(json.dumps([r["prompt"] for r in rows]).encode()).hexdigest()[:12]
    for label, model in conductors(work).items():
        path = folder / f"{label.replace(' ', '_')}.{weights_digest(model)}.{prompts}.texts.json"
        if not path.exists():
            say(f"greedy workflows of {label} on {len(rows)} test questions")
            done = Sampler.load(model).complete(
                rows,
                max_new_tokens=work.request.max_completion,
                on_row=lambda index: say(f"decoded {index + 1} of {len(rows)}"),
            )
            path.write_text(json.dumps([found[0] for found in done]))
        texts[label] = json.loads(path.read_text())
    return texts


def _scored(
    work: Work, pool: PoolConfig, rows: list[dict[str, Any]], texts: dict[str, list[str]]
) -> dict[str, list[dict[str, Any]]]:
    reward = reward_of(pool, work.test, max(work.request.cost_weights), max_steps=10)
    try:
        return {
            label: scored_json(
                reward.score(
                    [
                        (text, row["task_id"], json.loads(row["workers"]))
                        for row, text in zip(rows, found, strict=True)
                    ]
                )
            )
            for label, found in texts.items()
        }
    finally:
        reward.close()


def stage_eval(work: Work, pool: PoolConfig, team_scores: TeamScores) -> None:
    """Greedy workflows of every conductor and the baselines on the test subset, scored."""
    folder = work.root / "eval"
    folder.mkdir(exist_ok=True)
    request = work.request
    rows = work.rows(work.test, pool, request.seed + 1, every_worker=True)
    texts = _greedy_texts(work, rows, folder)
    baselines = [
        baseline_workflows(json.loads(row["workers"]), work.test.sets[row["task_id"].split("/")[0]])
        for row in rows
    ]
    texts |= {name: [found[name] for found in baselines] for name in baselines[0]}
    picks = train_picks(work.root, work.train, pool, max(request.cost_weights))
    texts[REACHABLE] = picked_texts(picks, work.test, rows)
    scores = _scored(work, pool, rows, texts)
    task_ids = [r["task_id"] for r in rows]
    say("the served teams (policies/<set>-team) on the test splits")
    scores[TEAM], kinds = _cached_team_scores(
        team_scores, work.test, task_ids, Path(request.policies), folder, max(request.cost_weights)
    )
    (folder / "scores.json").write_text(
        json.dumps(
            {"task_ids": task_ids, "texts": texts, "scores": scores}
            | {"workers": [json.loads(r["workers"]) for r in rows]}
            | {"team_kinds": kinds, "picked_on_train": picks}
        )
    )


def _cached_team_scores(
    team_scores: TeamScores,
    test: MixedTasks,
    task_ids: list[str],
    policies: Path,
    folder: Path,
    cost_weight: float,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """`team_scores`, kept in FOLDER/served-team.json (the eval stage reruns cheaply)."""
    path = folder / "served-team.json"
    if path.exists():
        kept = json.loads(path.read_text())
        if kept["task_ids"] == task_ids and kept["cost_weight"] == cost_weight:
            return kept["scores"], kept["kinds"]
    scores, kinds = team_scores(test, task_ids, policies, folder, cost_weight)
    rows = [s.__dict__ | {"shape": None} for s in scores]
    path.write_text(
        json.dumps(
            {"task_ids": task_ids, "cost_weight": cost_weight, "scores": rows, "kinds": kinds}
        )
    )
    return rows, kinds
