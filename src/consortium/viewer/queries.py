"""The viewer's reads of the trace store: aggregated in SQL, filtered by the run (and policy or
task) through the store's composite indexes, so a page costs the rows it shows, not the run's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, and_, cast, column, func, inspect, not_, or_, select, table
from sqlalchemy.engine import Engine

from consortium.runtime.liveness import with_liveness
from consortium.runtime.store import task_rows
from consortium.runtime.store_tables import calls, results, runs, stages

_MODEL_CALL = or_(calls.c.role.is_(None), not_(calls.c.role.like("tool%")))
"""Rows of model calls: a workflow's tool steps are traced as rows of role `tool` that called
no model, and count in no call total."""

SINGLE = "single:"
_AFTER_SINGLE = "single;"  # the first string after every "single:…": a range the index can use


@dataclass(frozen=True)
class DatasetStats:
    """One policy on one dataset of a run: its task results summed."""

    policy: str
    dataset: str
    tasks: int
    correct: int
    calls: int
    tokens: int
    cost: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.tasks if self.tasks else 0.0


@dataclass(frozen=True)
class Choice:
    """How many calls (or tasks, for the oracle) went to `model` in `role` on `dataset`."""

    dataset: str
    model: str
    role: str
    count: int


def dataset_stats(engine: Engine, run_id: str) -> list[DatasetStats]:
    """Per policy and dataset: tasks, right answers, calls, tokens and cost (one GROUP BY)."""
    query = (
        select(
            results.c.policy,
            results.c.dataset,
            func.count().label("tasks"),
            func.sum(cast(results.c.correct, Integer)).label("correct"),
            func.coalesce(func.sum(results.c.calls), 0).label("calls"),
            func.coalesce(func.sum(results.c.tokens), 0).label("tokens"),
            func.coalesce(func.sum(results.c.cost), 0.0).label("cost"),
        )
        .where(results.c.run_id == run_id)
        .group_by(results.c.policy, results.c.dataset)
        .order_by(func.min(results.c.id), results.c.dataset)
    )
    with engine.connect() as db:
        return [
            DatasetStats(
                row.policy,
                row.dataset or "",
                int(row.tasks),
                int(row.correct or 0),
                int(row.calls),
                int(row.tokens),
                float(row.cost),
            )
            for row in db.execute(query)
        ]


def policy_choices(engine: Engine, run_id: str, policy: str) -> list[Choice]:
    """The calls of one policy by the dataset of their task, model and role."""
    joined = calls.join(
        results,
        and_(
            results.c.run_id == calls.c.run_id,
            results.c.policy == calls.c.policy,
            results.c.task_id == calls.c.task_id,
        ),
        isouter=True,
    )
    # Plain columns in GROUP BY (no expressions): PostgreSQL matches them to the SELECT list.
    query = (
        select(results.c.dataset, calls.c.model, calls.c.role, func.count())
        .select_from(joined)
        .where(calls.c.run_id == run_id, calls.c.policy == policy, _MODEL_CALL)
        .group_by(results.c.dataset, calls.c.model, calls.c.role)
    )
    counts: dict[tuple[str, str, str], int] = {}
    with engine.connect() as db:
        for dataset, model, role, count in db.execute(query):
            key = (dataset if dataset is not None else "(no result)", model, role or "worker")
            counts[key] = counts.get(key, 0) + int(count)
    return [Choice(*key, count) for key, count in counts.items()]


UNSOLVED = "(no single model)"


def oracle_choices(engine: Engine, run_id: str) -> list[Choice]:
    """Per task, the cheapest single-model policy that answered it right (ties: by name); tasks
    that no single model solved count under `UNSOLVED`. Counted per dataset."""
    singles = and_(
        results.c.run_id == run_id,
        results.c.policy >= SINGLE,
        results.c.policy < _AFTER_SINGLE,
    )
    rank = (
        func.row_number()
        .over(partition_by=results.c.task_id, order_by=(results.c.cost, results.c.policy))
        .label("rank")
    )
    ranked = (
        select(results.c.task_id, results.c.dataset, results.c.policy, rank)
        .where(singles, results.c.correct.is_(True))
        .subquery()
    )
    solved = (
        select(ranked.c.dataset, ranked.c.policy, func.count())
        .where(ranked.c.rank == 1)
        .group_by(ranked.c.dataset, ranked.c.policy)
    )
    tasks = (
        select(results.c.dataset, func.count(func.distinct(results.c.task_id)))
        .where(singles)
        .group_by(results.c.dataset)
    )
    with engine.connect() as db:
        found = [
            Choice(row[0] or "", row[1].removeprefix(SINGLE), "worker", int(row[2]))
            for row in db.execute(solved)
        ]
        totals = {row[0] or "": int(row[1]) for row in db.execute(tasks)}
    for dataset, total in totals.items():
        missing = total - sum(c.count for c in found if c.dataset == dataset)
        if missing > 0:
            found.append(Choice(dataset, UNSOLVED, "worker", missing))
    return found


def run_headers(engine: Engine) -> list[dict[str, Any]]:
    """Every run's header, the latest first."""
    with engine.connect() as db:
        rows = db.execute(select(runs).order_by(runs.c.started_at.desc()))
        return [with_liveness(dict(row._mapping)) for row in rows]


def run_totals(engine: Engine, run_id: str) -> tuple[int, float]:
    """A run's calls and their cost."""
    query = select(func.count(), func.coalesce(func.sum(calls.c.cost), 0.0)).where(
        calls.c.run_id == run_id, _MODEL_CALL
    )
    with engine.connect() as db:
        row = db.execute(query).one()
    return int(row[0]), float(row[1])


def run_models(engine: Engine, run_id: str) -> list[str]:
    """The models a run called, in the order of their first call (the pages' colour order)."""
    query = (
        select(calls.c.model)
        .where(calls.c.run_id == run_id, _MODEL_CALL)
        .group_by(calls.c.model)
        .order_by(func.min(calls.c.id))
    )
    with engine.connect() as db:
        return [row[0] for row in db.execute(query)]


def task_page_results(
    engine: Engine, run_id: str, policy: str, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of a policy's task results, in the order they finished, and how many there are."""
    where = (results.c.run_id == run_id, results.c.policy == policy)
    page = select(results).where(*where).order_by(results.c.id).offset(offset).limit(limit)
    count = select(func.count()).select_from(results).where(*where)
    with engine.connect() as db:
        rows = [dict(row._mapping) for row in db.execute(page)]
        return rows, int(db.execute(count).scalar_one())


def ungraded_tasks(
    engine: Engine, run_id: str, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of the tasks a run called models for (runs without results: `serve`, `ask`),
    per task and policy: its calls, tokens and cost; and how many there are."""
    where = calls.c.run_id == run_id
    keys = (calls.c.task_id, calls.c.policy)
    page = (
        select(
            *keys,
            func.count().filter(_MODEL_CALL).label("calls"),
            func.sum(calls.c.prompt_tokens + calls.c.completion_tokens).label("tokens"),
            func.sum(calls.c.cost).label("cost"),
        )
        .where(where)
        .group_by(*keys)
        .order_by(func.min(calls.c.id))
        .offset(offset)
        .limit(limit)
    )
    count = select(func.count()).select_from(select(*keys).where(where).group_by(*keys).subquery())
    with engine.connect() as db:
        rows = [dict(row._mapping) for row in db.execute(page)]
        return rows, int(db.execute(count).scalar_one())


def task_calls(engine: Engine, run_id: str, task_id: str) -> list[dict[str, Any]]:
    """Every call of one task (all policies), in the order they were written."""
    return task_rows(engine, calls, run_id, task_id)


def task_stages(engine: Engine, run_id: str, task_id: str) -> list[dict[str, Any]]:
    """The stages of one task's answer-aware policies, in the order they were asked."""
    return task_rows(engine, stages, run_id, task_id)


def task_results(engine: Engine, run_id: str, task_id: str) -> list[dict[str, Any]]:
    """The grade of one task under each policy."""
    return task_rows(engine, results, run_id, task_id)


def policy_tokens(engine: Engine, run_id: str, policy: str) -> tuple[int, int]:
    """A policy's prompt and completion tokens over the run (from its calls)."""
    query = select(
        func.coalesce(func.sum(calls.c.prompt_tokens), 0),
        func.coalesce(func.sum(calls.c.completion_tokens), 0),
    ).where(calls.c.run_id == run_id, calls.c.policy == policy)
    with engine.connect() as db:
        row = db.execute(query).one()
    return int(row[0]), int(row[1])


def fingerprint(engine: Engine, run_id: str) -> tuple[int, int]:
    """The run's latest call and result ids. Calls and results are only ever appended, so these
    change whenever a row is written and aggregates keyed by them are never stale; each is one
    index lookup, however long the run."""
    with engine.connect() as db:
        last_call = db.execute(select(func.max(calls.c.id)).where(calls.c.run_id == run_id))
        last_result = db.execute(select(func.max(results.c.id)).where(results.c.run_id == run_id))
        return int(last_call.scalar() or 0), int(last_result.scalar() or 0)


_strategies = table("evolve_strategies", column("strategy_id"), column("spec"))


def strategy_specs(engine: Engine, strategy_ids: Sequence[str]) -> dict[str, str]:
    """The JSON spec of each evolved strategy named (evolve stores them beside its runs); empty
    for a store that never ran evolve."""
    if not strategy_ids or not inspect(engine).has_table("evolve_strategies"):
        return {}
    query = select(_strategies.c.strategy_id, _strategies.c.spec).where(
        _strategies.c.strategy_id.in_(list(strategy_ids))
    )
    with engine.connect() as db:
        return {row.strategy_id: row.spec for row in db.execute(query)}
