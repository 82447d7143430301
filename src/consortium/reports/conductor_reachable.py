"""The reachable report (reports/conductor-reachable.md and .json, `scripts/conductor_reachable.py`
says what it measures): per data set and pick rule, the fixed workflow (`workflow_family`) picked
on the training questions, measured on the set's whole test split against its best single model
with a paired bootstrap interval, and whether the adaptive report's targets are in reach."""

from __future__ import annotations

from typing import Any

from consortium.coord.conductor.templates import workflow_family
from consortium.train.conductor.adaptive.families import (
    Scores,
    family_scores,
    pick,
    reward_of,
)
from consortium.train.conductor.adaptive.request import FOLDERS
from consortium.train.conductor.adaptive.run import RecordsPool
from consortium.train.conductor.measure import paired_difference
from consortium.train.conductor.mixed_pool import MixedTasks, mixed_tasks
from consortium.train.conductor.workflow_reward import Scored

TARGET = "within 0.5 pts of the best single at ≤ 60 % of its $, or above it with CI > 0"
CHEAPEST = "the cheapest within 0.5 pts of the best single's train accuracy"


def cheapest_near_best(found: Scores, train: MixedTasks) -> dict[str, str]:
    """Per data set, the cheapest member whose train accuracy is within 0.5 points of the best
    single model's: the target's own rule, applied on train."""
    picks = {}
    for dataset, by_member in found.items():
        accuracy = {
            name: 100 * sum(s.right for _, s in runs) / len(runs)
            for name, runs in by_member.items()
        }
        cost = {name: sum(s.cost for _, s in runs) for name, runs in by_member.items()}
        bar = accuracy[train.sets[dataset].best_model] - 0.5
        picks[dataset] = min((n for n in by_member if accuracy[n] >= bar), key=cost.__getitem__)
    return picks


def scores_on_test(
    reward: Any, test: MixedTasks, members: set[tuple[str, str]]
) -> dict[tuple[str, str], list[Scored]]:
    """Each (data set, family member) on every test question of its set."""
    rollouts, keys = [], []
    for dataset, name in sorted(members):
        roster = list(test.sets[dataset].roster)
        text = workflow_family(roster)[name].to_text(roster)
        for task in test.of(dataset):
            rollouts.append((text, task.id, roster))
            keys.append((dataset, name))
    found: dict[tuple[str, str], list[Scored]] = {key: [] for key in members}
    for key, scored in zip(keys, reward.score(rollouts), strict=True):
        found[key].append(scored)
    return found


def rows_of(
    picks: dict[str, dict[str, str]],
    test: MixedTasks,
    scores: dict[tuple[str, str], list[Scored]],
) -> list[dict[str, Any]]:
    rows = []
    for rule, picked in picks.items():
        for dataset, name in sorted(picked.items()):
            mine = scores[(dataset, name)]
            best = scores[(dataset, test.sets[dataset].best_model)]
            diff, low, high = paired_difference([s.right for s in mine], [s.right for s in best])
            ratio = sum(s.cost for s in mine) / max(sum(s.cost for s in best), 1e-12)
            rows.append(
                {
                    "rule": rule,
                    "dataset": dataset,
                    "picked": name,
                    "n": len(mine),
                    "accuracy": 100 * sum(s.right for s in mine) / len(mine),
                    "best_single": test.sets[dataset].best_model,
                    "best_accuracy": 100 * sum(s.right for s in best) / len(best),
                    "difference": [diff, low, high],
                    "cost_ratio": ratio,
                    "met": (diff >= -0.5 and ratio <= 0.6) or low > 0,
                }
            )
    return rows


def markdown(rows: list[dict[str, Any]], train_per_set: int, command: str) -> str:
    lines = [
        "# What one fixed workflow per data set reaches (mixed records pool)",
        "",
        f"Made by `{command}`.",
        "",
        "Replay of recorded outputs of real models (GSM8K, MATH, HumanEval, DATE): a step's answer "
        "is its model's recorded sample whatever it is told (declared simulation). Per data set "
        "and λ, the family member with the best mean reward of `conductor_adaptive.py` (right 1, "
        "wrong 0.5, less λ x $ in units of the best single model's mean $ on train) on "
        f"{train_per_set} training questions per set, then the whole test split. The family: "
        "each model alone; each ordered pair of models, then `check`; each model three times, "
        "then `vote` or `check`; every model, then `vote`; and cascades, whose last step runs "
        "only when the `accept` before it confirms nothing (its cost is paid only then): one "
        "model, `accept` (a program that passes its docstring examples), another model; two "
        "answers (two models, or one model twice), `accept` (they agree), a third model. No "
        "conductor writes these workflows: they are what one workflow per set can reach with "
        "this pool and reward.",
        "",
        "| picked on train by | data set | workflow | test questions | accuracy % | "
        f"best single (train) | its accuracy % | Δ pts [95% CI] | $ vs best single | {TARGET} |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        diff, low, high = row["difference"]
        lines.append(
            f"| {row['rule']} | {row['dataset']} | {row['picked']} | {row['n']} | "
            f"{row['accuracy']:.2f} | {row['best_single']} | {row['best_accuracy']:.2f} | "
            f"{diff:+.2f} [{low:+.2f}, {high:+.2f}] | {row['cost_ratio']:.0%} | "
            f"{'yes' if row['met'] else 'no'} |"
        )
    lines += ["", "Sets meeting the target, per rule:", ""]
    for rule in dict.fromkeys(row["rule"] for row in rows):
        met = [r["dataset"] for r in rows if r["rule"] == rule and r["met"]]
        lines.append(f"- {rule}: {len(met)} of 4 ({', '.join(met) or 'none'})")
    return "\n".join(lines) + "\n"


def reachable_rows(
    records: RecordsPool, lambdas: list[float], train_per_set: int, seed: int
) -> list[dict[str, Any]]:
    """The report's rows: each pick rule's member per data set, measured on its test split."""
    train = mixed_tasks(FOLDERS, "train", per_set=train_per_set, seed=seed)
    test = mixed_tasks(FOLDERS, "test", seed=seed + 1, infos=train.sets)
    with records.served() as pool:
        on_train = reward_of(pool, train, 0.0, max_steps=10)
        try:
            found = family_scores(on_train, train)
        finally:
            on_train.close()
        picks = {f"reward at λ = {value:g}": pick(found, value) for value in lambdas}
        picks[CHEAPEST] = cheapest_near_best(found, train)
        members = {(d, n) for chosen in picks.values() for d, n in chosen.items()}
        members |= {(d, info.best_model) for d, info in test.sets.items()}
        on_test = reward_of(pool, test, 0.0, max_steps=10)
        try:
            scores = scores_on_test(on_test, test, members)
        finally:
            on_test.close()
    return rows_of(picks, test, scores)
