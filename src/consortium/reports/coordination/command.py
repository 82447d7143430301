"""The library call behind `consortium coordinate`: each records folder through the one recipe,
then one report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consortium.core.costs import CostMeasure
from consortium.evaluation.recorded.cost_measure import in_measure, require_measure
from consortium.evaluation.recorded.outcomes import Verdicts
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evaluation.recorded.transcript_text import transcript_text
from consortium.records.agreement import grade_warnings
from consortium.records.corpora import is_project_corpus
from consortium.records.store import Records, load_records
from consortium.reports.coordination.pipeline import LAMBDAS, DatasetResult, run_dataset
from consortium.reports.coordination.report import dataset_summary, write_report
from consortium.reports.coordination.router_runs import question_features
from consortium.reports.coordination.targets import GROUP_TARGETS, TARGETS, group_summary
from consortium.tasks.code_checks import example_coverage
from consortium.train.trinity.recorded_turns import Budget


@dataclass(frozen=True)
class CoordinationRequest:
    records: Sequence[Path]
    out: Path
    budget: Budget = field(default_factory=Budget)
    lambdas: tuple[float, ...] = LAMBDAS
    cache_dir: Path | None = None
    targets: dict[str, float] = field(default_factory=lambda: dict(TARGETS))
    """Accuracy targets by data set, judged only on the corpora they were set for (the project's
    own, `records.corpora.is_project_corpus`), as are the group targets."""
    routers: bool = False
    """Also the kNN and MLP routers (encodes every question with all-MiniLM-L6-v2)."""
    transcript_text: bool = False
    """Also the λ=0 head reading the transcript's static MiniLM feature (the ablation)."""
    optimizer_seeds: tuple[int, ...] = ()
    """Seeds of the optimizer table (none: no table)."""
    verdicts: Verdicts = "ours"
    cost: CostMeasure = "usd"
    """What cost is measured in: the records' dollars, tokens, or seconds (wall time)."""


def run_coordination(
    request: CoordinationRequest, log: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    say = log or (lambda _: None)
    summaries = []
    grouped = {d for target in GROUP_TARGETS.values() for d in target.datasets}
    kept: dict[str, DatasetResult] = {}  # only the sets a group target needs stay in memory
    own: set[str] = set()  # the project's corpora, the only sets the targets were set for
    warned = {folder: _warnings(load_records(folder), request.cost) for folder in request.records}
    for line in (line for lines in warned.values() for line in lines):
        say(line)
    for folder in request.records:
        records = load_records(folder)
        if is_project_corpus(records.manifest):
            own.add(records.manifest.dataset)
        say(f"{records.manifest.dataset}: building the outcome table")
        table = outcome_table(records, request.cache_dir, verdicts=request.verdicts)
        table = in_measure(table, records, request.cost)
        texts = _questions(records)
        features = None
        if request.routers:
            say(f"{table.dataset}: encoding the questions")
            features = question_features([texts[q] for q in table.question_ids], request.cache_dir)
        text = None
        if request.transcript_text:
            from consortium.coord.trinity.static_encoder import StaticMiniLMEncoder

            say(f"{table.dataset}: encoding the questions and responses (static MiniLM)")
            text = transcript_text(records, table, StaticMiniLMEncoder().token_sums)
        result = run_dataset(
            table,
            request.budget,
            request.lambdas,
            log=_prefixed(say, table.dataset),
            optimizer_seeds=request.optimizer_seeds,
            question_features=features,
            text=text,
            measure=request.cost,
        )
        summary = dataset_summary(result)
        summary["grade_warnings"] = warned[folder]
        if table.dataset in grouped & own:
            kept[table.dataset] = result
        if table.answer_kind == "code":
            coverage = example_coverage(texts[q] for q in table.question_ids)
            summary["docstring_examples"] = asdict(coverage)
            say(f"{table.dataset}: {coverage.text()}")
        summaries.append(summary)
    groups = [
        group
        for name, target in GROUP_TARGETS.items()
        if (group := group_summary(name, target, kept)) is not None
    ]
    targets = {dataset: goal for dataset, goal in request.targets.items() if dataset in own}
    write_report(summaries, request.out, targets, groups)
    return summaries


def _warnings(records: Records, measure: CostMeasure) -> list[str]:
    """The folder's grade warnings, once it is known to be costable in `measure` (every folder
    is checked before the first one's long run)."""
    require_measure(records, measure)
    return [w.line() for w in grade_warnings(records)]


def _questions(records: Records) -> dict[str, str]:
    columns = records.table.select(["question_id", "question"]).to_pylist()
    return {row["question_id"]: row["question"] for row in columns}


def _prefixed(say: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: say(f"{name}: {line}")
