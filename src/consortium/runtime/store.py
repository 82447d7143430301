"""The trace store: every call, written as it completes. SQLite (WAL) by default, or any
SQLAlchemy URL.

`sqlite:///traces.db` (default), `postgresql+psycopg://user@host/db` for teams. API keys never reach
this module: a call record holds model names, messages, answers, usage, cost, latency and errors.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from consortium.core.errors import ConfigError
from consortium.core.types import Message

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(40), primary_key=True),
    Column("kind", String(40), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("status", String(20), nullable=False),
    Column("pool", Text),
    Column("config", Text),
    Column("summary", Text),
)

calls = Table(
    "calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), nullable=False, index=True),
    Column("policy", String(200)),
    Column("task_id", String(200), index=True),
    Column("turn", Integer),
    Column("model", String(200), nullable=False),
    Column("role", String(40)),
    Column("messages_hash", String(64)),
    Column("messages", Text),
    Column("response", Text),
    Column("prompt_tokens", Integer),
    Column("completion_tokens", Integer),
    Column("cost", Float),
    Column("latency", Float),
    Column("verdict", String(40)),
    Column("error", Text),
    Column("cached", Boolean),
    Column("fallback_from", String(200)),
    Column("created_at", Float, nullable=False),
)

results = Table(
    "results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), nullable=False, index=True),
    Column("policy", String(200), nullable=False),
    Column("task_id", String(200), nullable=False),
    Column("dataset", String(100)),
    Column("answer", Text),
    Column("correct", Boolean),
    Column("score", Float),
    Column("detail", Text),
    Column("calls", Integer),
    Column("tokens", Integer),
    Column("cost", Float),
    Column("error", Text),
    Column("created_at", Float, nullable=False),
    Column("reference", Text),
)

# Covering indexes for the viewer's per-run, per-policy and per-task reads, so that a page of a
# run of 100,000 calls reads index entries, not table rows; stores written before they existed
# get them on open.
INDEXES = (
    Index(
        "ix_calls_run_policy_task",
        *(calls.c[name] for name in ("run_id", "policy", "task_id", "model", "role")),
        *(calls.c[name] for name in ("prompt_tokens", "completion_tokens", "cost")),
    ),
    Index("ix_calls_run_task", calls.c.run_id, calls.c.task_id),
    Index(
        "ix_results_run_policy_dataset",
        *(results.c[name] for name in ("run_id", "policy", "dataset", "correct")),
        *(results.c[name] for name in ("calls", "tokens", "cost", "task_id")),
    ),
    Index(
        "ix_results_run_policy_task",
        *(results.c[name] for name in ("run_id", "policy", "task_id", "dataset")),
    ),
    Index("ix_results_run_task", results.c.run_id, results.c.task_id),
)


@dataclass
class CallRecord:
    run_id: str
    model: str
    messages: Sequence[Message]
    response: str | None
    policy: str | None = None
    task_id: str | None = None
    turn: int | None = None
    role: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency: float = 0.0
    verdict: str | None = None
    error: str | None = None
    cached: bool = False
    fallback_from: str | None = None
    """The model that failed and that this call stands in for."""


@dataclass
class ResultRecord:
    run_id: str
    policy: str
    task_id: str
    dataset: str
    answer: str | None
    correct: bool
    score: float
    detail: str
    calls: int
    tokens: int
    cost: float
    error: str | None = None
    """Why the task failed (`core.errors.reason`: type and message), when it did."""
    reference: str | None = None
    """The task's reference answer, as the grader compared it (None for code tasks' tests)."""


WAL_SWITCH_ATTEMPTS = 40


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA busy_timeout=10000")
    # The switch needs the file to itself, and while another process opens the same new store
    # SQLite can answer "database is locked" even with a busy_timeout set (under load, a few
    # openers in a thousand, 8 at once: scripts/store_open_race.py), so it is retried.
    _retried(
        lambda: cursor.execute("PRAGMA journal_mode=WAL"),
        lambda error: isinstance(error, sqlite3.OperationalError) and "locked" in str(error),
        WAL_SWITCH_ATTEMPTS,
        pause=0.02,
    )
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _retried(
    action: Callable[[], object],
    transient: Callable[[Exception], bool],
    attempts: int,
    pause: float,
) -> None:
    """Run `action`, again after a pause of attempt × `pause` seconds (at most 0.5 s) while it
    fails with an error `transient` accepts, up to `attempts` runs in all; other errors, and the
    last attempt's, are raised. For races between processes opening the same new store."""
    for attempt in range(attempts):
        try:
            action()
            return
        except Exception as error:
            if not transient(error) or attempt == attempts - 1:
                raise
            time.sleep(min(0.5, pause * (attempt + 1)))


@dataclass
class Run:
    """A run in progress (`TraceStore.running`): its id, and the summary stored when it ends."""

    run_id: str
    summary: dict[str, Any] = field(default_factory=dict)


DEFAULT_TRACES = "sqlite:///consortium-traces.db"
"""Where every command writes its traces unless told otherwise (`--traces`, $CONSORTIUM_TRACES)."""


class TraceStore:
    def __init__(self, url: str = DEFAULT_TRACES) -> None:
        self.url = url
        try:
            self.engine: Engine = create_engine(url)
        except Exception as error:  # SQLAlchemy raises several kinds for a bad URL
            raise ConfigError(f"trace store URL {url!r}: {error}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._create_schema()

    def _create_schema(self, attempts: int = 5) -> None:
        """Tables, newer columns and indexes, each created only where missing. Processes opening
        a new store at once (Ray workers, parallel commands) race between the check and the
        create: the loser's CREATE fails on what the winner just made; its next check sees it.
        The server is reached once first, so an unreachable one fails at once, not per attempt."""
        self.engine.connect().close()
        _retried(
            self._create_missing,
            lambda error: isinstance(error, DBAPIError),
            attempts,
            pause=0.05,
        )

    def _create_missing(self) -> None:
        metadata.create_all(self.engine)
        self._add_missing_columns()
        for index in INDEXES:
            index.create(self.engine, checkfirst=True)

    def _add_missing_columns(self) -> None:
        """Stores written by an earlier version lack newer nullable columns; add them."""
        for table in (calls, results):
            existing = {c["name"] for c in inspect(self.engine).get_columns(table.name)}
            with self.engine.begin() as db:
                for column in table.columns:
                    if column.name not in existing and column.nullable:
                        kind = column.type.compile(self.engine.dialect)
                        db.execute(
                            text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                        )

    def start_run(self, kind: str, *, pool: str = "", config: dict[str, Any] | None = None) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self.engine.begin() as db:
            db.execute(
                insert(runs).values(
                    run_id=run_id,
                    kind=kind,
                    started_at=time.time(),
                    status="running",
                    pool=pool,
                    config=json.dumps(config or {}),
                )
            )
        return run_id

    @contextmanager
    def running(
        self,
        kind: str,
        *,
        pool: str = "",
        config: dict[str, Any] | None = None,
        resume: str | None = None,
    ) -> Iterator[Run]:
        """A run from start to end, the one lifecycle every command shares: `finished` when the
        block ends, `interrupted` on Ctrl-C, `failed` on any other exception (the calls and
        results it finished stay stored). `resume` continues an existing run instead of starting
        one."""
        run = Run(resume or self.start_run(kind, pool=pool, config=config))
        try:
            yield run
        except KeyboardInterrupt:
            self.finish_run(run.run_id, "interrupted", run.summary)
            raise
        except BaseException:
            self.finish_run(run.run_id, "failed", run.summary)
            raise
        self.finish_run(run.run_id, "finished", run.summary)

    def finish_run(self, run_id: str, status: str, summary: dict[str, Any] | None = None) -> None:
        with self.engine.begin() as db:
            db.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(
                    finished_at=time.time(),
                    status=status,
                    summary=json.dumps(summary or {}),
                )
            )

    @staticmethod
    def _call_values(record: CallRecord) -> dict[str, Any]:
        values = asdict(record)
        serialized = json.dumps(list(record.messages), ensure_ascii=False)
        values["messages"] = serialized
        values["messages_hash"] = hashlib.sha256(serialized.encode()).hexdigest()
        values["created_at"] = time.time()
        return values

    def record_call(self, record: CallRecord) -> int:
        with self.engine.begin() as db:
            # parameters beside a plain insert, not `.values()`: the compiled statement is cached
            result = db.execute(insert(calls), self._call_values(record))
        key = result.inserted_primary_key
        return int(key[0]) if key else 0

    def record_calls(self, records: Sequence[CallRecord]) -> None:
        """Several rows in one transaction (the trace queue's batches)."""
        if records:
            with self.engine.begin() as db:
                db.execute(insert(calls), [self._call_values(r) for r in records])

    def record_result(self, record: ResultRecord) -> None:
        with self.engine.begin() as db:
            db.execute(insert(results), {**asdict(record), "created_at": time.time()})

    def list_runs(self) -> list[dict[str, Any]]:
        counted = (
            select(
                calls.c.run_id,
                func.count().label("calls"),
                func.coalesce(func.sum(calls.c.cost), 0.0).label("cost"),
            )
            .group_by(calls.c.run_id)
            .subquery()
        )
        query = (
            select(
                runs,
                func.coalesce(counted.c.calls, 0).label("calls"),
                func.coalesce(counted.c.cost, 0.0).label("cost"),
            )
            .outerjoin(counted, counted.c.run_id == runs.c.run_id)
            .order_by(runs.c.started_at.desc())
        )
        with self.engine.connect() as db:
            return [dict(row._mapping) for row in db.execute(query)]

    def run(self, run_id: str) -> dict[str, Any] | None:
        """A run's header; `latest` names the run started last."""
        query = select(runs)
        if run_id == "latest":
            query = query.order_by(runs.c.started_at.desc()).limit(1)
        else:
            query = query.where(runs.c.run_id == run_id)
        with self.engine.connect() as db:
            row = db.execute(query).first()
        return dict(row._mapping) if row else None

    def iter_calls(self, run_id: str) -> Iterator[dict[str, Any]]:
        query = select(calls).where(calls.c.run_id == run_id).order_by(calls.c.id)
        with self.engine.connect() as db:
            for row in db.execute(query):
                yield dict(row._mapping)

    def task_calls(self, run_id: str, task_id: str) -> list[dict[str, Any]]:
        query = (
            select(calls)
            .where(calls.c.run_id == run_id, calls.c.task_id == task_id)
            .order_by(calls.c.id)
        )
        with self.engine.connect() as db:
            return [dict(row._mapping) for row in db.execute(query)]

    def iter_results(self, run_id: str) -> Iterator[dict[str, Any]]:
        query = select(results).where(results.c.run_id == run_id).order_by(results.c.id)
        with self.engine.connect() as db:
            for row in db.execute(query):
                yield dict(row._mapping)

    def close(self) -> None:
        self.engine.dispose()
