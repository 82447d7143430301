"""Everything the adaptive conductor report shows (reports/conductor-adaptive.json), read from
what the pipeline's stages wrote in the work folder."""

from __future__ import annotations

import json
from typing import Any

from consortium.train.conductor.adaptive.evaluate import TEAM, scored_from
from consortium.train.conductor.adaptive.families import LABEL as REACHABLE
from consortium.train.conductor.adaptive.families import agreement_with_pick, naming_the_pick
from consortium.train.conductor.adaptive.work import Work
from consortium.train.conductor.measure import (
    FIXED,
    figures_by_set,
    paired_difference,
    shape_label,
    shape_test,
)
from consortium.train.conductor.workflow_reward import Scored

BASELINES = ("best single", "vote (all)", *FIXED, REACHABLE, TEAM)
"""The rows that are no conductor."""


def summary_of(work: Work) -> dict[str, Any]:
    """Everything the report shows, from what the stages wrote."""
    evaluated = json.loads((work.root / "eval" / "scores.json").read_text())
    task_of = {t.id: t for t in work.test.tasks}
    tasks = [task_of[i] for i in evaluated["task_ids"]]
    scores = {label: scored_from(rows) for label, rows in evaluated["scores"].items()}
    figures = {label: figures_by_set(tasks, found) for label, found in scores.items()}
    versus_best: dict[str, dict[str, tuple[float, float, float]]] = {}
    for label, found in scores.items():
        versus_best[label] = {}
        for name in work.test.sets:
            picked = [i for i, t in enumerate(tasks) if t.meta["dataset"] == name]
            versus_best[label][name] = paired_difference(
                [found[i].right for i in picked], [scores["best single"][i].right for i in picked]
            )

    def labels(found: list[Scored], datasets: list[str]) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for name, scored in zip(datasets, found, strict=True):
            grouped.setdefault(name, []).append(shape_label(scored))
        return grouped

    test_sets = [t.meta["dataset"] for t in tasks]
    conductors = [k for k in evaluated["texts"] if k not in BASELINES]
    shapes = {
        label: shape_test(labels(found, test_sets), seed=work.request.seed)
        for label, found in scores.items()
        if label not in BASELINES
    }
    sampled = json.loads((work.root / "shapes-warm.json").read_text())
    warm_sampled = shape_test(
        labels(
            [
                Scored(0.0, r["valid"], shape=tuple(r["shape"]) if r["shape"] else None)
                for r in sampled["scores"]
            ],
            sampled["datasets"],
        )
    )
    examples: dict[str, dict[str, list[str]]] = {}
    for label, found in evaluated["texts"].items():
        if label in BASELINES:
            continue
        examples[label] = {}
        for task, text in zip(tasks, found, strict=True):
            examples[label].setdefault(task.meta["dataset"], []).append(text)
    logs = {}
    for path in sorted(work.root.glob("*-l*")):
        log = path / ("rewards.jsonl" if path.name.startswith("grpo") else "rounds.jsonl")
        if log.exists():
            logs[path.name] = [json.loads(line) for line in log.read_text().splitlines() if line]
    provenance = work.root / "PROVENANCE.md"
    return {
        "sets": {name: info.__dict__ for name, info in work.test.sets.items()},
        "settings": work.request.settings(),
        "figures": {k: {n: f.__dict__ for n, f in v.items()} for k, v in figures.items()},
        "versus_best": versus_best,
        "shapes": {k: v.__dict__ for k, v in shapes.items()},
        "shapes_sampled_warm": warm_sampled.__dict__,
        "sampled_warm": sampled,
        "examples": examples,
        "logs": logs,
        "provenance": provenance.read_text().strip() if provenance.is_file() else None,
        "team_kinds": evaluated.get("team_kinds", {}),
        "picked": evaluated.get("picked_on_train", {}),
        "agrees_with_pick": agreement_with_pick(
            evaluated["texts"], test_sets, conductors, evaluated.get("workers")
        ),
        "names_pick": naming_the_pick(
            evaluated["texts"], test_sets, evaluated.get("picked_on_train", {}), conductors
        ),
    }
