"""What one fixed workflow per data set reaches with this pool and reward: among a family of
workflows over a set's models, the one with the best mean reward on training questions at a λ,
then measured on test questions. No conductor writes it: it shows whether a target is out of the
pool's reach or only out of a conductor's. Picked on train only; test questions never steer the
pick. Used by the adaptive pipeline (a row of its report, what `distil` teaches) and
`scripts/conductor_reachable.py`."""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consortium.coord.conductor.templates import workflow_family
from consortium.coord.conductor.workflow import Workflow, WorkflowError, written_lists
from consortium.pool.config import PoolConfig
from consortium.runtime.budget import Limits
from consortium.tasks.base import Task
from consortium.train.conductor.mixed_pool import MixedTasks
from consortium.train.conductor.workflow_reward import (
    RIGHT,
    WRONG,
    Scored,
    WorkflowReward,
    cost_penalty,
)

LABEL = "fixed, picked on train"
Scores = dict[str, dict[str, list[tuple[Task, Scored]]]]
"""Per data set, per family member: each training question and its score."""


def family_scores(reward: WorkflowReward, tasks: MixedTasks) -> Scores:
    """Every family member of each task's set, run on the task (its roster in its own order)."""
    rollouts: list[tuple[str, str, list[str]]] = []
    keys: list[tuple[Task, str]] = []
    families = {name: workflow_family(info.roster) for name, info in tasks.sets.items()}
    for task in tasks.tasks:
        roster = list(tasks.sets[task.meta["dataset"]].roster)
        for name, workflow in families[task.meta["dataset"]].items():
            rollouts.append((workflow.to_text(roster), task.id, roster))
            keys.append((task, name))
    found: Scores = defaultdict(lambda: defaultdict(list))
    for (task, name), scored in zip(keys, reward.score(rollouts), strict=True):
        found[task.meta["dataset"]][name].append((task, scored))
    return found


def pick(scores: Scores, cost_weight: float) -> dict[str, str]:
    """Per data set, the member with the best mean reward at λ = `cost_weight` (right 1, wrong
    0.5, less λ x $ in the task's cost unit); ties go to the cheaper."""

    def merit(found: list[tuple[Task, Scored]]) -> tuple[float, float]:
        reward = sum(
            (RIGHT if s.right else WRONG) - cost_penalty(t, s.cost, cost_weight) for t, s in found
        )
        return reward / len(found), -sum(s.cost for _, s in found)

    return {name: max(by, key=lambda m: merit(by[m])) for name, by in scores.items()}


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


def train_picks(
    root: Path, train: MixedTasks, pool: PoolConfig, cost_weight: float
) -> dict[str, str]:
    """Per data set, the fixed workflow picked on the training questions at `cost_weight`
    (`pick`): the report's `fixed, picked on train` row and what `distil` teaches. Kept in
    ROOT/eval/picked-on-train-lλ.json once made."""
    kept = root / "eval" / f"picked-on-train-l{cost_weight:g}.json"
    if not kept.exists():
        kept.parent.mkdir(exist_ok=True)
        picking = reward_of(pool, train, 0.0, max_steps=10)
        try:
            picks = pick(family_scores(picking, train), cost_weight)
        finally:
            picking.close()
        kept.write_text(json.dumps(picks, indent=1))
    found: dict[str, str] = json.loads(kept.read_text())
    return found


def picked_workflows(picks: dict[str, str], tasks: MixedTasks) -> dict[str, Workflow]:
    """Each set's pick, by set name: the family member of that name over the set's roster."""
    return {name: workflow_family(tasks.sets[name].roster)[m] for name, m in picks.items()}


def picked_texts(picks: dict[str, str], test: MixedTasks, rows: list[dict[str, Any]]) -> list[str]:
    """Each test row's workflow: its set's pick, written for the row's worker order."""
    picked = picked_workflows(picks, test)
    return [
        picked[row["task_id"].split("/")[0]].to_text(json.loads(row["workers"])) for row in rows
    ]


def distil_examples(
    rows: list[dict[str, Any]],
    tasks: MixedTasks,
    picks: dict[str, str],
    n: int,
    seed: int,
    *,
    by_name: bool = False,
) -> list[dict[str, Any]]:
    """SFT pairs that teach a conductor the picks (`conductor_adaptive.py --methods distil`):
    `n` prompt/completion pairs cycling over `rows` in a seeded order, each row's completion its
    set's pick in the row's numbering of its workers after a `<think>` line that names the pick's
    steps, models before numbers (writing a number is then copying the one beside a name).
    `by_name`: the steps name their models instead of numbering them (no roster lookup)."""
    picked = picked_workflows(picks, tasks)
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    examples = []
    for index in range(n):
        row = rows[order[index % len(rows)]]
        dataset = row["task_id"].split("/")[0]
        workflow = picked[dataset]
        count = len(workflow.steps)
        think = f"<think>{count} step{'s' if count > 1 else ''}: {picks[dataset]}.</think>\n"
        text = workflow.to_text(json.loads(row["workers"]), by_name=by_name)
        examples.append({"prompt": row["prompt"], "completion": " " + think + text})
    return examples


def workflow_lists(
    text: str, workers: Sequence[str] | None = None
) -> tuple[list[object], list[object]] | None:
    """A workflow text's `model_id` and `access_list` as written (the parser's reading), each
    worker number turned into its name in `workers` (the prompt's roster) when given, so a
    workflow that names its models equals one that numbers them; None when its lists cannot
    be read."""
    try:
        lists = written_lists(text)
    except WorkflowError:
        return None
    models = lists["model_id"]
    if workers is not None:
        models = [workers[m] if type(m) is int and 0 <= m < len(workers) else m for m in models]
    return models, lists["access_list"]


def agreement_with_pick(
    texts: dict[str, list[str]],
    datasets: list[str],
    labels: list[str],
    workers: list[list[str]] | None = None,
) -> dict[str, dict[str, list[int]]]:
    """Per conductor and set: how many of its test workflows have the same models, tools and
    access lists as the workflow picked on train, of how many. `workers`: each test prompt's
    roster, to compare models by name (without it, by number as written)."""
    rosters: list[list[str] | None] = list(workers) if workers else [None] * len(datasets)
    found: dict[str, dict[str, list[int]]] = {}
    for label in labels:
        found[label] = {}
        for text, picked, name, roster in zip(
            texts[label], texts[LABEL], datasets, rosters, strict=True
        ):
            counts = found[label].setdefault(name, [0, 0])
            ours = workflow_lists(text, roster)
            counts[0] += ours is not None and ours == workflow_lists(picked, roster)
            counts[1] += 1
    return found


THINK = re.compile(r"\s*<think>\s*\d+ steps?: (.*?)\.</think>")
"""The `<think>` line `distil_examples` teaches: the step count, then the pick by name."""


def naming_the_pick(
    texts: dict[str, list[str]], datasets: list[str], picks: dict[str, str], labels: list[str]
) -> dict[str, dict[str, list[int]]]:
    """Per conductor and set: how many of its test workflows open with a `<think>` line naming
    the set's pick (the team, by model name, before any worker number is written), of how
    many. Beside `agreement_with_pick` it tells a wrong team from a right team with wrong
    numbers."""
    found: dict[str, dict[str, list[int]]] = {}
    for label in labels:
        found[label] = {}
        for text, name in zip(texts[label], datasets, strict=True):
            counts = found[label].setdefault(name, [0, 0])
            think = THINK.match(text)
            counts[0] += think is not None and think.group(1) == picks.get(name)
            counts[1] += 1
    return found


def counts_by_set(by_label: dict[str, dict[str, list[int]]]) -> str:
    """'label: set n/of, …; label: …' — per conductor, a count of test workflows per set."""
    return (
        "; ".join(
            f"{label}: " + ", ".join(f"{name} {n}/{of}" for name, (n, of) in sorted(by.items()))
            for label, by in by_label.items()
        )
        + "."
    )
