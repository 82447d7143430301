"""The trace store: every call, written as it completes. SQLite (WAL) by default, or any
SQLAlchemy URL.

`sqlite:///traces.db` (default), `postgresql+psycopg://user@host/db` for teams. API keys never reach
this module: a call record holds model names, messages, answers, usage, cost, latency and errors.
The tables are in `store_tables`, the rows callers fill in (`CallRecord`, ...) in `store_records`.
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

from sqlalchemy import Table, create_engine, event, func, insert, inspect, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from consortium.core.errors import ConfigError
from consortium.runtime.liveness import this_process, with_liveness
from consortium.runtime.store_records import CallRecord, ResultRecord, StageRecord
from consortium.runtime.store_tables import INDEXES, calls, metadata, results, runs, stages

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


def task_rows(engine: Engine, table: Table, run_id: str, task_id: str) -> list[dict[str, Any]]:
    """One task's rows of `table` (calls, stages or results; every policy's), in the order they
    were written."""
    query = (
        select(table)
        .where(table.c.run_id == run_id, table.c.task_id == task_id)
        .order_by(table.c.id)
    )
    with engine.connect() as db:
        return [dict(row._mapping) for row in db.execute(query)]


def _owned_here() -> dict[str, Any]:
    owner = this_process()
    return {"host": owner.host, "pid": owner.pid, "pid_token": owner.token}


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
        for table in (runs, calls, results, stages):
            existing = {c["name"] for c in inspect(self.engine).get_columns(table.name)}
            with self.engine.begin() as db:
                for column in table.columns:
                    if column.name not in existing and column.nullable:
                        kind = column.type.compile(self.engine.dialect)
                        db.execute(
                            text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                        )

    def start_run(self, kind: str, *, pool: str = "", config: dict[str, Any] | None = None) -> str:
        """A new run, `running`, owned by this process (its status reads `interrupted` once the
        process is gone without finishing it)."""
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
                    **_owned_here(),
                )
            )
        return run_id

    def resume_run(self, run_id: str) -> None:
        """An earlier run continued by this process: `running` again, and owned by it."""
        with self.engine.begin() as db:
            db.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(status="running", finished_at=None, **_owned_here())
            )

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
        if resume is not None:
            self.resume_run(resume)
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

    def record_rows(self, records: Sequence[CallRecord | StageRecord]) -> None:
        """Calls, and the stages of the answer-aware policies that made them, in one transaction
        (the trace queue's batches)."""
        call_rows = [self._call_values(r) for r in records if isinstance(r, CallRecord)]
        now = time.time()
        stage_rows = [
            {**asdict(r), "created_at": now} for r in records if isinstance(r, StageRecord)
        ]
        if call_rows or stage_rows:
            with self.engine.begin() as db:
                if call_rows:
                    db.execute(insert(calls), call_rows)
                if stage_rows:
                    db.execute(insert(stages), stage_rows)

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
            return [with_liveness(dict(row._mapping)) for row in db.execute(query)]

    def run(self, run_id: str) -> dict[str, Any] | None:
        """A run's header; `latest` names the run started last."""
        query = select(runs)
        if run_id == "latest":
            query = query.order_by(runs.c.started_at.desc()).limit(1)
        else:
            query = query.where(runs.c.run_id == run_id)
        with self.engine.connect() as db:
            row = db.execute(query).first()
        return with_liveness(dict(row._mapping)) if row else None

    def iter_calls(self, run_id: str) -> Iterator[dict[str, Any]]:
        return self._run_rows(calls, run_id)

    def task_calls(self, run_id: str, task_id: str) -> list[dict[str, Any]]:
        return task_rows(self.engine, calls, run_id, task_id)

    def task_stages(self, run_id: str, task_id: str) -> list[dict[str, Any]]:
        """The stages of one task's answer-aware policies, in the order they were asked."""
        return task_rows(self.engine, stages, run_id, task_id)

    def iter_stages(self, run_id: str) -> Iterator[dict[str, Any]]:
        return self._run_rows(stages, run_id)

    def iter_results(self, run_id: str) -> Iterator[dict[str, Any]]:
        return self._run_rows(results, run_id)

    def _run_rows(self, table: Table, run_id: str) -> Iterator[dict[str, Any]]:
        """A run's rows of `table`, in the order they were written, read as they are iterated."""
        query = select(table).where(table.c.run_id == run_id).order_by(table.c.id)
        with self.engine.connect() as db:
            for row in db.execute(query):
                yield dict(row._mapping)

    def close(self) -> None:
        self.engine.dispose()
