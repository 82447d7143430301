"""Coordination's cost in the measure its user pays in (`consortium.core.costs`, as in evolve):
dollars, tokens or seconds. A pool of local models declares prices of 0, so in dollars every
policy costs the same and no selection can trade accuracy for cost.

Every policy run sums its samples' `Sample.cost_usd`, so a table in another measure is the same
table with that field holding each sample's tokens (tokens_in + tokens_out) or its wall time
(`latency_s`): the train objective, λ, the cost target's shares and the cost floor follow
unchanged, in that measure."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from consortium.core.costs import CostMeasure, cost_of, unit
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.records.errors import RecordsError
from consortium.records.store import Records


@dataclass(frozen=True)
class _Spent:
    """One recorded sample's spending in each measure (a `core.costs.Costed`)."""

    cost: float
    tokens: int
    seconds: float


def require_measure(records: Records, measure: CostMeasure) -> None:
    """Raises RecordsError (one line) when `records` cannot be costed in `measure`: seconds need
    every sample's recorded wall time."""
    if measure != "seconds":
        return
    timeless = records.table.column("latency_s").null_count
    if timeless:
        raise RecordsError(
            f"{records.manifest.dataset}: --cost seconds needs each sample's wall time "
            f"(latency_s), and {timeless} of {records.table.num_rows} samples have none "
            "(imported outputs rarely carry it): use --cost tokens or usd"
        )


def in_measure(table: OutcomeTable, records: Records, measure: CostMeasure) -> OutcomeTable:
    """`table` (built from `records`) with each sample's cost in `measure`. Raises RecordsError
    when seconds are asked and some sample has no recorded wall time."""
    if measure == "usd":
        return table
    require_measure(records, measure)
    columns = ["question_id", "model", "sample", "cost_usd", "tokens_in", "tokens_out"]
    rows = records.table.select([*columns, "latency_s"]).to_pylist()
    spent: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for row in rows:
        figure = _Spent(
            float(row["cost_usd"]),
            int(row["tokens_in"]) + int(row["tokens_out"]),
            float(row["latency_s"] or 0.0),
        )
        spent[(row["question_id"], row["model"])].append((row["sample"], cost_of(figure, measure)))
    samples = []
    for question_id, per_question in zip(table.question_ids, table.samples, strict=True):
        per_model = []
        for model, built in zip(table.models, per_question, strict=True):
            # the table holds a question's samples of a model in sample order
            costs = [cost for _, cost in sorted(spent[(question_id, model)])]
            per_model.append(
                tuple(
                    replace(sample, cost_usd=cost)
                    for sample, cost in zip(built, costs, strict=True)
                )
            )
        samples.append(tuple(per_model))
    return replace(table, samples=tuple(samples))


def figure_label(measure: CostMeasure) -> str:
    """How the report heads a cost figure: `$`, `tokens` or `s`."""
    return "$" if measure == "usd" else unit(measure)
