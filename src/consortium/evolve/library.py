"""The strategy library, in the trace database: every strategy tried, its measured record per
task cluster and round, and every change considered with the evidence for or against it."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Integer,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
)

from consortium.coord.strategy import Strategy
from consortium.runtime.store import TraceStore
from consortium.runtime.store_tables import metadata

# The evolve tables are defined on the trace store's schema (`metadata`), beside its own.

strategies = Table(
    "evolve_strategies",
    metadata,
    Column("strategy_id", String(20), primary_key=True),
    Column("spec", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

records = Table(
    "evolve_records",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("evolve_id", String(60), nullable=False, index=True),
    Column("round", Integer, nullable=False),
    Column("strategy_id", String(20), nullable=False, index=True),
    Column("split", String(20), nullable=False),
    Column("cluster", String(100), nullable=False),
    Column("tasks", Integer, nullable=False),
    Column("correct", Integer, nullable=False),
    Column("calls", Integer, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("cost", Float, nullable=False),
    Column("escalated", Integer, nullable=False),
)

changes = Table(
    "evolve_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("evolve_id", String(60), nullable=False, index=True),
    Column("round", Integer, nullable=False),
    Column("incumbent_id", String(20), nullable=False),
    Column("candidate_id", String(20), nullable=False),
    Column("proposer", String(60), nullable=False),
    Column("rationale", Text),
    Column("adopted", Boolean, nullable=False),
    Column("reason", Text),
    Column("evidence", Text),
)


@dataclass(frozen=True)
class ClusterRecord:
    """One strategy on one cluster's tasks of one round (cluster "*": all of them)."""

    strategy_id: str
    split: str
    cluster: str
    tasks: int
    correct: int
    calls: int
    tokens: int
    cost: float
    escalated: int


@dataclass(frozen=True)
class ChangeRecord:
    incumbent_id: str
    candidate_id: str
    proposer: str
    rationale: str
    adopted: bool
    reason: str
    evidence: dict[str, Any]


class StrategyLibrary:
    def __init__(self, store: TraceStore) -> None:
        self.engine = store.engine
        metadata.create_all(self.engine)

    def record_round(
        self,
        evolve_id: str,
        round_: int,
        tried: Sequence[Strategy],
        measured: Sequence[ClusterRecord],
        considered: Sequence[ChangeRecord],
    ) -> None:
        """One transaction per round; writing a round again (after a resume) replaces it."""
        with self.engine.begin() as db:
            known = {row[0] for row in db.execute(select(strategies.c.strategy_id))}
            for strategy in {s.id: s for s in tried if s.id not in known}.values():
                db.execute(
                    insert(strategies).values(
                        strategy_id=strategy.id,
                        spec=strategy.model_dump_json(),
                        created_at=time.time(),
                    )
                )
            for table in (records, changes):
                db.execute(
                    delete(table).where(table.c.evolve_id == evolve_id, table.c.round == round_)
                )
            for record in measured:
                db.execute(
                    insert(records).values(evolve_id=evolve_id, round=round_, **asdict(record))
                )
            for change in considered:
                values = asdict(change)
                values["evidence"] = json.dumps(change.evidence)
                db.execute(insert(changes).values(evolve_id=evolve_id, round=round_, **values))

    def strategy(self, strategy_id: str) -> Strategy | None:
        with self.engine.connect() as db:
            row = db.execute(
                select(strategies.c.spec).where(strategies.c.strategy_id == strategy_id)
            ).first()
        return Strategy.model_validate_json(row[0]) if row else None

    def records(self, evolve_id: str) -> list[dict[str, Any]]:
        query = select(records).where(records.c.evolve_id == evolve_id).order_by(records.c.id)
        with self.engine.connect() as db:
            return [dict(row._mapping) for row in db.execute(query)]

    def changes(self, evolve_id: str) -> list[dict[str, Any]]:
        query = select(changes).where(changes.c.evolve_id == evolve_id).order_by(changes.c.id)
        with self.engine.connect() as db:
            rows = [dict(row._mapping) for row in db.execute(query)]
        for row in rows:
            row["evidence"] = json.loads(row["evidence"] or "{}")
        return rows
