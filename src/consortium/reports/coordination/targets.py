"""The coordination report's accuracy targets and the policies they are judged on: one target
per data set, and targets on the mean over several data sets (RouterBench's three), judged with a
paired bootstrap that resamples each set's questions on its own. They were set for the project's
own corpora (`records.corpora.is_project_corpus`), and `consortium coordinate` judges them on
those only: a user's own records of the same name get no target line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any

from consortium.evaluation.recorded.baselines import ceiling
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.selection import paired_bootstrap_mean
from consortium.reports.coordination.pipeline import DatasetResult

TARGETS = {"gsm8k": 96.8, "math": 83.5, "humaneval": 92.0, "date": 91.5}
"""Per data set: accuracy on its test split."""


@dataclass(frozen=True)
class GroupTarget:
    datasets: tuple[str, ...]
    accuracy: float
    """The mean over the data sets of each one's test accuracy (every set weighs the same)."""


GROUP_TARGETS = {
    "RouterBench mean": GroupTarget(("rb_arc_challenge", "rb_mbpp", "rb_winogrande"), 84.5)
}

HEADLINE = ("learned answer scorer", "TRINITY replay, sep-CMA-ES, λ=0", "weighted vote")
"""The answer-aware policies the accuracy targets are judged on, declared before any test figure
(no policy is picked by its test accuracy; train accuracy of fitted policies is in-sample)."""


def judged(name: str) -> bool:
    """Whether the targets are judged on the policy of this name (TRINITY at λ = 0 only)."""
    return name.startswith(HEADLINE) and not name.endswith(("0.05", "0.2", "0.5"))


def group_summary(
    name: str, target: GroupTarget, results: Mapping[str, DatasetResult]
) -> dict[str, Any] | None:
    """Each judged policy's mean test accuracy over the target's data sets against the mean of
    each set's best single model (train-chosen); None unless every set was run."""
    if any(dataset not in results for dataset in target.datasets):
        return None
    members = [results[dataset] for dataset in target.datasets]
    tests = [member.table.indices("test") for member in members]
    singles = [member.runs[member.best_single] for member in members]
    named = list(dict.fromkeys(r.name for m in members for r in m.runs if judged(r.name)))
    policies, not_on_every_set = [], []
    for policy in named:
        runs = _runs_named(members, policy)
        if runs is None:
            not_on_every_set.append(policy)
            continue
        pairs = [
            (run.correct[test], single.correct[test])
            for run, single, test in zip(runs, singles, tests, strict=True)
        ]
        per_set = [100 * float(first.mean()) for first, _ in pairs]
        policies.append(
            {
                "name": policy,
                "accuracy": fmean(per_set),
                "per_set": per_set,
                "vs_best_single": asdict(paired_bootstrap_mean(pairs)),
            }
        )
    single_accuracy = [
        100 * float(single.correct[test].mean())
        for single, test in zip(singles, tests, strict=True)
    ]
    ceilings = [100 * ceiling(m.table, t) for m, t in zip(members, tests, strict=True)]
    return {
        "name": name,
        "datasets": list(target.datasets),
        "target": target.accuracy,
        "best_singles": [m.table.models[m.best_single] for m in members],
        "best_single_accuracy": fmean(single_accuracy),
        "best_single_per_set": single_accuracy,
        "ceiling_accuracy": fmean(ceilings),
        "policies": policies,
        "not_on_every_set": not_on_every_set,
    }


def _runs_named(members: Sequence[DatasetResult], name: str) -> list[PolicyRun] | None:
    """The run of this name in every member, or None when some member lacks it."""
    runs = [next((run for run in member.runs if run.name == name), None) for member in members]
    found = [run for run in runs if run is not None]
    return found if len(found) == len(runs) else None
