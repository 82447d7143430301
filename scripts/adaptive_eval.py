"""The evaluation stage of `conductor_adaptive.py`, and the helpers its stages share: greedy
workflows of each conductor on the test subset, scored beside the baselines (the best single
model, the vote, the fixed workflows, one fixed workflow per set picked on train, the served
team) through the same executor, replay and grader."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from adaptive_reachable import LABEL as REACHABLE
from adaptive_reachable import family_scores, pick, picked_texts
from adaptive_report import scored_json
from adaptive_team import LABEL as TEAM
from adaptive_team import cached_team_scores
from consortium.core.errors import ConsortiumError
from consortium.pool.config import PoolConfig
from consortium.records.errors import RecordsError
from consortium.runtime.budget import Limits
from consortium.smallmodels.files import sha256_of
from consortium.train.conductor.grpo import last_complete_checkpoint
from consortium.train.conductor.measure import baseline_workflows
from consortium.train.conductor.mixed_pool import MixedTasks
from consortium.train.conductor.rejection_sft import last_round
from consortium.train.conductor.workflow_reward import WorkflowReward
from consortium.train.conductor.workflow_sampling import Sampler

if TYPE_CHECKING:
    from conductor_adaptive import Work


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def reward_of(
    pool: PoolConfig, tasks: MixedTasks, cost_weight: float, *, max_steps: int = 5
) -> WorkflowReward:
    """The reward; `max_steps` above 5 for the baselines (a vote over six models is 7 steps)."""
    return WorkflowReward(
        pool,
        tasks.tasks,
        tasks.grader,
        cost_weight=cost_weight,
        max_steps=max_steps,
        task_limits=Limits(max_calls=max_steps),
    )


def lambda_values(text: str) -> list[float]:
    """`--lambdas`: comma-separated λ values, each at least 0."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r} (e.g. 0,0.2)") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"a λ below 0 in {text!r}: a cost weight is at least 0")
    return values


def exit_on_error(script: str, body: Callable[[], None]) -> None:
    """Runs `body`; a project error ends the script with one line (missing records: with the
    make target that imports them)."""
    try:
        body()
    except RecordsError as error:
        sys.exit(f"{script}: {error} (`make records` imports the four folders)")
    except ConsortiumError as error:
        sys.exit(f"{script}: {error}")


def lambdas(args: argparse.Namespace) -> list[float]:
    return lambda_values(args.lambdas)


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
    (those `--evaluate` names, when it names some)."""
    found = {"base": work.base, "warm start": str(work.warm_dir)}
    for cost_weight in lambdas(work.args):
        for method in work.args.methods.split(","):
            model = trained_model(work.root / f"{method}-l{cost_weight:g}", method)
            if model is not None:
                found[f"{method.upper()} λ={cost_weight:g}"] = str(model)
    chosen = work.args.evaluate
    if chosen == "all":
        return found
    names = {name.strip() for name in chosen.split(",")}
    return {label: model for label, model in found.items() if label in names}


def train_picks(work: Work, pool: PoolConfig, cost_weight: float) -> dict[str, str]:
    """Per data set, the fixed workflow picked on the training questions at `cost_weight`
    (`adaptive_reachable.pick`): the report's `fixed, picked on train` row and what `distil`
    teaches. Kept in WORK/eval/picked-on-train-lλ.json once made."""
    kept = work.root / "eval" / f"picked-on-train-l{cost_weight:g}.json"
    if not kept.exists():
        kept.parent.mkdir(exist_ok=True)
        picking = reward_of(pool, work.train, 0.0, max_steps=10)
        try:
            picks = pick(family_scores(picking, work.train), cost_weight)
        finally:
            picking.close()
        kept.write_text(json.dumps(picks, indent=1))
    found: dict[str, str] = json.loads(kept.read_text())
    return found


def weights_digest(model: str) -> str:
    """The first 12 hex digits of the sha256 over a model folder's weight files: a folder
    retrained under the same label gets new greedy texts, not the old ones."""
    digest = hashlib.sha256()
    for weights in sorted(Path(model).glob("*.safetensors")):
        digest.update(sha256_of(weights).encode())
    return digest.hexdigest()[:12]


def stage_eval(work: Work, pool: PoolConfig) -> None:
    """Greedy workflows of every conductor and the baselines on the test subset, scored."""
    folder = work.root / "eval"
    folder.mkdir(exist_ok=True)
    args = work.args
    rows = work.rows(work.test, pool, args.seed + 1, every_worker=True)
    texts: dict[str, list[str]] = {}
    prompts = hashlib.sha256(json.dumps([r["prompt"] for r in rows]).encode()).hexdigest()[:12]
    for label, model in conductors(work).items():  # kept per conductor, weights and test prompts
        path = folder / f"{label.replace(' ', '_')}.{weights_digest(model)}.{prompts}.texts.json"
        if not path.exists():
            say(f"greedy workflows of {label} on {len(rows)} test questions")
            done = Sampler.load(model).complete(
                rows,
                max_new_tokens=args.max_completion,
                on_row=lambda index: say(f"decoded {index + 1} of {len(rows)}"),
            )
            path.write_text(json.dumps([found[0] for found in done]))
        texts[label] = json.loads(path.read_text())
    baselines = [
        baseline_workflows(json.loads(row["workers"]), work.test.sets[row["task_id"].split("/")[0]])
        for row in rows
    ]
    texts |= {name: [found[name] for found in baselines] for name in baselines[0]}
    picks = train_picks(work, pool, max(lambdas(args)))
    texts[REACHABLE] = picked_texts(picks, work.test, rows)
    reward = reward_of(pool, work.test, max(lambdas(args)), max_steps=10)
    try:
        scores = {
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
    task_ids = [r["task_id"] for r in rows]
    say("the served teams (policies/<set>-team) on the test splits")
    scores[TEAM], kinds = cached_team_scores(
        work.test, task_ids, Path(args.policies), folder, max(lambdas(args))
    )
    (folder / "scores.json").write_text(
        json.dumps(
            {"task_ids": task_ids, "texts": texts, "scores": scores}
            | {"workers": [json.loads(r["workers"]) for r in rows]}
            | {"team_kinds": kinds, "picked_on_train": picks}
        )
    )
