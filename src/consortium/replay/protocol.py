"""RouterDC's evaluation protocol (Chen et al., NeurIPS 2024): a router is scored by the recorded
outcome of the model it chose.

Per question the metric is the recorded score of the chosen model as RouterDC counts it: on
multiple-choice sets a score > 0 counts 1 (the model's argmax option was right), on sampled sets the
recorded fraction of right samples counts as it is. Replay tasks carry exactly that number as
``meta["p_correct"][recorded model id]``. Dataset figures are in %; the ID and OOD means are
unweighted means of the dataset means; intervals come from a paired bootstrap within each dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from consortium.core.errors import ConsortiumError
from consortium.evaluation.tables import markdown_table
from consortium.records.names import short_name
from consortium.replay.tasks import ID_DATASETS, OOD_DATASETS
from consortium.tasks.base import Task
from consortium.tasks.recorded import recorded_outcomes

if TYPE_CHECKING:
    from consortium.evaluation.results import TaskResult

Floats = NDArray[np.float64]
Interval = tuple[float, float]

BEST_SINGLE = "best single"
PER_DATASET_BEST = "per-dataset best"
ORACLE = "oracle (per-question best)"


@dataclass(frozen=True)
class PublishedRow:
    name: str
    per_dataset: dict[str, float]
    id_mean: float
    """Over all five ID datasets, including those whose figure is not given here."""
    citation: str


ROUTERDC_PUBLISHED = PublishedRow(
    name="RouterDC (published)",
    per_dataset={"mmlu": 61.07, "gsm8k": 70.32, "arc_challenge": 58.52, "humaneval": 51.02},
    id_mean=58.54,
    citation="RouterDC, Chen et al., NeurIPS 2024, Table 1",
)


@dataclass(frozen=True)
class ProtocolRow:
    name: str
    per_dataset: dict[str, float]
    """Mean recorded score of the chosen models per dataset, in %."""
    id_mean: float | None
    ood_mean: float | None
    values: Floats = field(repr=False)
    """Per task, in task order: the recorded score of the chosen model (0..1)."""
    task_datasets: tuple[str, ...] = field(repr=False)
    """Per task, its dataset: two rows are compared only over the same tasks in the same order."""
    note: str = ""
    anchor: bool = False
    sampled: dict[str, float] | None = None
    """Per dataset, accuracy of the graded sampled draws in % (policies run through a server)."""
    delta_vs_best_single: float | None = None
    ci_vs_best_single: Interval | None = None
    delta_vs_per_dataset_best: float | None = None
    ci_vs_per_dataset_best: Interval | None = None


def require_recorded(tasks: Sequence[Task]) -> None:
    """A clear error unless every task carries recorded outcomes (a replay task set)."""
    if not tasks or any(recorded_outcomes(task) is None for task in tasks):
        raise ConsortiumError(
            "the RouterDC protocol needs a replay task set (--tasks replay:…) whose tasks carry "
            "recorded outcomes; these tasks have none"
        )


def _recorded(task: Task, model: str) -> float:
    p_correct = recorded_outcomes(task) or {}
    if model not in p_correct:
        raise ConsortiumError(f"task {task.id} has no recorded outcome of model {model!r}")
    return float(p_correct[model])


def score_matrix(tasks: Sequence[Task], models: Sequence[str]) -> Floats:
    """Recorded score of each model (recorded ids, columns) on each task (rows)."""
    require_recorded(tasks)
    matrix = [[_recorded(task, model) for model in models] for task in tasks]
    return np.array(matrix, dtype=np.float64).reshape(len(tasks), len(models))


def _group_mean(per_dataset: Mapping[str, float], group: Sequence[str]) -> float | None:
    values = [per_dataset[d] for d in group if d in per_dataset]
    return sum(values) / len(values) if values else None


def row_from_values(
    name: str, tasks: Sequence[Task], values: ArrayLike, *, note: str = ""
) -> ProtocolRow:
    """The row of a policy whose chosen model scored `values` (per task, in task order)."""
    scored = np.asarray(values, dtype=np.float64)
    if scored.shape != (len(tasks),):
        raise ValueError(f"{name}: {scored.shape} values for {len(tasks)} tasks")
    labels = tuple(task.dataset for task in tasks)
    label_array = np.asarray(labels)
    per_dataset = {d: float(100 * scored[label_array == d].mean()) for d in dict.fromkeys(labels)}
    return ProtocolRow(
        name=name,
        per_dataset=per_dataset,
        id_mean=_group_mean(per_dataset, ID_DATASETS),
        ood_mean=_group_mean(per_dataset, OOD_DATASETS),
        values=scored,
        task_datasets=labels,
        note=note,
    )


def row_from_choices(
    name: str, tasks: Sequence[Task], scores: Floats, choices: ArrayLike, *, note: str = ""
) -> ProtocolRow:
    """The row of a router that chose model column `choices[i]` of `scores` for task i."""
    picked = np.asarray(choices, dtype=np.intp)
    return row_from_values(name, tasks, scores[np.arange(len(tasks)), picked], note=note)


def _headline(row: ProtocolRow) -> float:
    """The ID mean, or the mean over all datasets when the tasks hold no ID dataset."""
    if row.id_mean is not None:
        return row.id_mean
    return sum(row.per_dataset.values()) / len(row.per_dataset)


def anchor_rows(tasks: Sequence[Task], models: Sequence[str]) -> list[ProtocolRow]:
    """Best single model, per-dataset best model and per-question oracle, from the recorded
    outcomes alone (no calls); in that order."""
    scores = score_matrix(tasks, models)
    singles = [row_from_values(m, tasks, scores[:, j]) for j, m in enumerate(models)]
    best = max(range(len(models)), key=lambda j: _headline(singles[j]))
    best_of = {
        dataset: max(range(len(models)), key=lambda j: singles[j].per_dataset[dataset])
        for dataset in singles[0].per_dataset
    }
    per_dataset = row_from_choices(
        PER_DATASET_BEST,
        tasks,
        scores,
        [best_of[task.dataset] for task in tasks],
        note="given the dataset label; each dataset's model chosen on these test tasks",
    )
    rows = [
        replace(
            singles[best],
            name=f"{BEST_SINGLE} ({short_name(models[best])})",
            note="chosen on these test tasks",
        ),
        per_dataset,
        row_from_values(ORACLE, tasks, scores.max(axis=1), note="hindsight"),
    ]
    return [replace(row, anchor=True) for row in rows]


def paired_bootstrap_ci(
    values: ArrayLike,
    reference: ArrayLike,
    datasets: Sequence[str],
    groups: Sequence[str] = ID_DATASETS,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval | None:
    """Percentile interval, in points, of (mean of per-dataset means of `values`) minus the same
    of `reference` over the `groups` datasets, resampling tasks with replacement within each
    dataset and pairing the two rows task by task. None when no task is in `groups`."""
    difference = np.asarray(values, dtype=np.float64) - np.asarray(reference, dtype=np.float64)
    labels = np.asarray(datasets)
    present = [g for g in dict.fromkeys(groups) if np.any(labels == g)]
    if not present:
        return None
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for group in present:
        members = difference[labels == group]
        draws = rng.integers(0, members.size, size=(n_boot, members.size), dtype=np.int32)
        total += members[draws].mean(axis=1)
    boot = 100 * total / len(present)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(low), float(high)


def _versus(
    row: ProtocolRow, reference: ProtocolRow, n_boot: int, seed: int
) -> tuple[float | None, Interval | None]:
    if row.task_datasets != reference.task_datasets:
        raise ValueError(f"{row.name} and {reference.name} do not score the same tasks in order")
    delta = None
    if row.id_mean is not None and reference.id_mean is not None:
        delta = row.id_mean - reference.id_mean
    datasets = row.task_datasets
    return delta, paired_bootstrap_ci(
        row.values, reference.values, datasets, n_boot=n_boot, seed=seed
    )


def with_cis(
    rows: Sequence[ProtocolRow],
    best_single: ProtocolRow,
    per_dataset_best: ProtocolRow,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[ProtocolRow]:
    """`rows` with the ID-mean difference (and its 95% interval) against both anchors filled in,
    for every row that is not itself an anchor."""
    filled: list[ProtocolRow] = []
    for row in rows:
        if not row.anchor:
            single, single_ci = _versus(row, best_single, n_boot, seed)
            dataset, dataset_ci = _versus(row, per_dataset_best, n_boot, seed)
            row = replace(
                row,
                delta_vs_best_single=single,
                ci_vs_best_single=single_ci,
                delta_vs_per_dataset_best=dataset,
                ci_vs_per_dataset_best=dataset_ci,
            )
        filled.append(row)
    return filled


def policy_row(
    name: str,
    results: Sequence[TaskResult],
    tasks: Sequence[Task],
    recorded_ids: Mapping[str, str],
) -> ProtocolRow:
    """A policy's row from its results: the recorded score of the model that answered (pool
    name -> recorded id via `recorded_ids`), 0 without an answer; with its sampled accuracy."""
    by_id = {result.task.id: result for result in results}
    values = [_answered_score(by_id.get(task.id), task, recorded_ids) for task in tasks]
    row = row_from_values(name, tasks, values)
    correct: dict[str, list[bool]] = {}
    for task in tasks:
        result = by_id.get(task.id)
        correct.setdefault(task.dataset, []).append(result is not None and result.grade.correct)
    sampled = {d: 100 * sum(flags) / len(flags) for d, flags in correct.items()}
    return replace(row, sampled=sampled)


def _answered_score(
    result: TaskResult | None, task: Task, recorded_ids: Mapping[str, str]
) -> float:
    if result is None or result.answer is None or result.answered_by is None:
        return 0.0
    recorded = recorded_ids.get(result.answered_by)
    if recorded is None:
        raise ConsortiumError(f"model {result.answered_by!r} answered but is not in the pool")
    return _recorded(task, recorded)


def routerdc_rows(
    per_policy: Mapping[str, Sequence[TaskResult]],
    tasks: Sequence[Task],
    recorded_ids: Mapping[str, str],
) -> list[ProtocolRow]:
    """Every policy's row, then the anchors over the pool's recorded models, with the intervals."""
    require_recorded(tasks)
    rows = [policy_row(name, results, tasks, recorded_ids) for name, results in per_policy.items()]
    recorded = recorded_outcomes(tasks[0]) or {}
    models = [m for m in dict.fromkeys(recorded_ids.values()) if m in recorded]
    if not models:
        raise ConsortiumError("no model of the pool has recorded outcomes for these tasks")
    anchors = anchor_rows(tasks, models)
    return with_cis([*rows, *anchors], anchors[0], anchors[1])


def _layout(datasets: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Column headers and the datasets each averages: ID sets, ID mean, OOD sets, OOD mean,
    then any other dataset."""
    ids = tuple(d for d in datasets if d in ID_DATASETS)
    oods = tuple(d for d in datasets if d in OOD_DATASETS)
    others = [d for d in datasets if d not in ids and d not in oods]
    layout = [(d, (d,)) for d in ids] + ([("ID mean", ids)] if ids else [])
    layout += [(d, (d,)) for d in oods] + ([("OOD mean", oods)] if oods else [])
    return layout + [(d, (d,)) for d in others]


def _cells(
    per_dataset: Mapping[str, float], layout: list[tuple[str, tuple[str, ...]]]
) -> list[str]:
    cells = []
    for _, members in layout:
        present = all(d in per_dataset for d in members)
        cells.append(f"{_group_mean(per_dataset, members):.2f}" if present else "–")
    return cells


def _delta(delta: float | None, interval: Interval | None) -> str:
    if delta is None or interval is None:
        return "–"
    return f"{delta:+.2f} [{interval[0]:+.2f}, {interval[1]:+.2f}]"


def _published_cells(layout: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    published = ROUTERDC_PUBLISHED
    cells = []
    for header, members in layout:
        if header == "ID mean":
            cells.append(f"{published.id_mean:.2f}" if set(members) == set(ID_DATASETS) else "–")
        else:
            cells.append(_cells(published.per_dataset, [(header, members)])[0])
    return cells


def protocol_markdown(
    rows: Sequence[ProtocolRow], datasets: Sequence[str], pool_description: str
) -> str:
    """One table: the policies, then the anchors, then RouterDC's published row (cited); below
    it the sampled-draw accuracy of the policies that ran through a server."""
    layout = _layout(datasets)
    ordered = [r for r in rows if not r.anchor] + [r for r in rows if r.anchor]
    header = ["policy", *(h for h, _ in layout)]
    body = [
        [
            r.name + (f" ({r.note})" if r.note else ""),
            *_cells(r.per_dataset, layout),
            _delta(r.delta_vs_best_single, r.ci_vs_best_single),
            _delta(r.delta_vs_per_dataset_best, r.ci_vs_per_dataset_best),
        ]
        for r in ordered
    ]
    cited = f"{ROUTERDC_PUBLISHED.name} (cited, not measured: {ROUTERDC_PUBLISHED.citation})"
    body.append([cited, *_published_cells(layout), "–", "–"])
    lines = [
        f"Pool: {pool_description}",
        "",
        "RouterDC protocol: per task, the recorded score of the model the policy chose; on "
        "multiple-choice sets (mmlu, cmmlu, ceval, arc_challenge) a score > 0 counts 1, on "
        "sampled sets (gsm8k, humaneval, mbpp, math_prealgebra) the recorded fraction of right "
        "samples counts; a task without an answer counts 0. Figures in %; ID and OOD means are "
        "unweighted means of the dataset means. Δ: difference of ID means in points, with a 95% "
        "paired bootstrap interval (tasks resampled within each dataset). The policies ran through "
        "the pool; the anchors come from the recorded outcomes of the pool's models alone; "
        "RouterDC's row is cited from the paper (full test sets).",
        "",
        *markdown_table(
            [*header, "Δ vs best single [95% CI]", "Δ vs per-dataset best [95% CI]"], body
        ),
    ]
    sampled = [r for r in ordered if r.sampled is not None]
    if sampled:
        lines += [
            "",
            "Sampled-draw accuracy (%): the replayed answers as drawn by the server, graded.",
            "",
            *markdown_table(header, [[r.name, *_cells(r.sampled or {}, layout)] for r in sampled]),
        ]
    return "\n".join(lines) + "\n"


def protocol_json(rows: Sequence[ProtocolRow]) -> dict[str, Any]:
    """Every row without its per-task arrays, then RouterDC's published figures."""
    per_task = {"values", "task_datasets"}
    return {
        "rows": [
            {f.name: getattr(row, f.name) for f in fields(row) if f.name not in per_task}
            for row in rows
        ],
        "published": asdict(ROUTERDC_PUBLISHED),
    }
