"""The learning server's rows in the trace store's database: requests and their calls written in
batches, feedback checked and written in one transaction, and the labelled traffic read back."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import case, func, insert, select, text, update

from consortium.runtime.store import TraceStore
from consortium.serve.learn.tables import feedback, metadata, outputs, served

REFIT_LOCK = 5_402_001
"""The PostgreSQL advisory lock a replica holds while it refits (any number; one per database)."""


class FeedbackError(ValueError):
    """Feedback that changes nothing: an unreadable body or reference (400), an id never served
    here (404), a second label for one id (409)."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_feedback") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def unknown_id(response_id: str) -> FeedbackError:
    return FeedbackError(f"unknown response id {response_id!r}", 404, "unknown_response")


@dataclass(frozen=True)
class ServedRequest:
    """One request as the writer stores it: its row of `learn_requests` and its calls."""

    request: dict[str, Any]
    calls: list[dict[str, Any]]


@dataclass(frozen=True)
class Label:
    response_id: str
    correct: bool | None
    reference: str | None


def store_url(folder: Path, traces: str) -> str:
    """Where DIR's traffic is kept: the trace store itself when it is a server (PostgreSQL, so
    replicas share it), else an SQLite file in DIR (a restart with the same DIR finds it)."""
    if traces.startswith("sqlite"):
        return f"sqlite:///{folder.resolve() / 'traffic.db'}"
    return traces


class TrafficStore:
    def __init__(self, url: str) -> None:
        self.traces = TraceStore(url)
        self.engine = self.traces.engine
        metadata.create_all(self.engine)

    def write_requests(self, batch: Sequence[ServedRequest]) -> None:
        if not batch:
            return
        calls = [call for item in batch for call in item.calls]
        with self.engine.begin() as db:
            db.execute(insert(served), [item.request for item in batch])
            if calls:
                db.execute(insert(outputs), calls)

    def add_shadow_calls(self, calls: Sequence[dict[str, Any]]) -> None:
        """Store an explored request's shadow calls, and mark it explored (under `--explore-on
        label` it was not when it was served)."""
        if calls:
            ids = {call["response_id"] for call in calls}
            with self.engine.begin() as db:
                db.execute(insert(outputs), list(calls))
                db.execute(
                    update(served).where(served.c.response_id.in_(ids)).values(explored=True)
                )

    def add_label(self, label: Label) -> None:
        """Store `label`; FeedbackError (nothing written) for an id never served here or one
        already labelled."""
        with self.engine.begin() as db:
            known = db.execute(
                select(served.c.response_id).where(served.c.response_id == label.response_id)
            ).first()
            if known is None:
                raise unknown_id(label.response_id)
            given = db.execute(
                select(feedback.c.response_id).where(feedback.c.response_id == label.response_id)
            ).first()
            if given is not None:
                raise FeedbackError(
                    f"response {label.response_id!r} already has feedback; it is kept as given",
                    409,
                    "already_labelled",
                )
            db.execute(
                insert(feedback),
                {
                    "response_id": label.response_id,
                    "correct": label.correct,
                    "reference": label.reference,
                    "created_at": time.time(),
                },
            )

    def request(self, response_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as db:
            row = db.execute(select(served).where(served.c.response_id == response_id)).first()
        return dict(row._mapping) if row else None

    def models_asked(self, response_id: str | None = None) -> list[str]:
        """Every model with a recorded call (served or shadow) of the request `response_id`, or
        of any request, by name."""
        query = select(outputs.c.model).distinct()
        if response_id is not None:
            query = query.where(outputs.c.response_id == response_id)
        with self.engine.connect() as db:
            return sorted(str(row.model) for row in db.execute(query))

    def labelled_count(self) -> int:
        with self.engine.connect() as db:
            return int(db.execute(select(func.count()).select_from(feedback)).scalar_one())

    def shadow_spent(self, since: float) -> tuple[float, list[tuple[float, float]]]:
        """The $ of every shadow call in the store, and (time, $) of the explored requests served
        since `since` (`time.time()`). No time is kept per call: a request's shadow calls count at
        its `created_at` (when it was answered; they run right after)."""
        total = select(func.coalesce(func.sum(outputs.c.cost_usd), 0.0)).where(outputs.c.shadow)
        recent = (
            select(served.c.created_at, func.sum(outputs.c.cost_usd))
            .join(outputs, outputs.c.response_id == served.c.response_id)
            .where(outputs.c.shadow, served.c.created_at >= since)
            .group_by(served.c.response_id, served.c.created_at)
            .order_by(served.c.created_at)
        )
        with self.engine.connect() as db:
            spent = float(db.execute(total).scalar_one())
            return spent, [(float(at), float(cost)) for at, cost in db.execute(recent)]

    def labelled(self) -> list[tuple[dict[str, Any], Label, list[dict[str, Any]]]]:
        """Every labelled request with its label and its calls, in the order they were served."""
        query = (
            select(served, feedback.c.correct, feedback.c.reference)
            .join(feedback, feedback.c.response_id == served.c.response_id)
            .order_by(served.c.created_at)
        )
        with self.engine.connect() as db:
            requests = [dict(row._mapping) for row in db.execute(query)]
            ids = [r["response_id"] for r in requests]
            calls: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                found = db.execute(
                    select(outputs).where(outputs.c.response_id.in_(chunk)).order_by(outputs.c.id)
                )
                for row in found:
                    calls[row.response_id].append(dict(row._mapping))
        return [
            (
                r,
                Label(r["response_id"], r.pop("correct"), r.pop("reference")),
                calls[r["response_id"]],
            )
            for r in requests
        ]

    def feedback_rows(self) -> list[dict[str, Any]]:
        """Every feedback with the request it labels, newest first (`consortium traces`)."""
        query = (
            select(
                feedback,
                served.c.version,
                served.c.answered_by,
                served.c.answer,
                served.c.explored,
            )
            .join(served, served.c.response_id == feedback.c.response_id)
            .order_by(feedback.c.created_at.desc())
        )
        with self.engine.connect() as db:
            return [dict(row._mapping) for row in db.execute(query)]

    def history(self) -> list[dict[str, Any]]:
        """Every served request in the order served, with its label (`correct`, `reference`:
        both None when unlabelled) and the $ of its calls: `cost` what answering it took,
        `shadow_cost` its exploration (the viewer's learning page)."""
        spent = (
            select(
                outputs.c.response_id,
                func.sum(case((outputs.c.shadow, 0.0), else_=outputs.c.cost_usd)).label("cost"),
                func.sum(case((outputs.c.shadow, outputs.c.cost_usd), else_=0.0)).label("shadow"),
            )
            .group_by(outputs.c.response_id)
            .subquery()
        )
        query = (
            select(
                served.c.response_id,
                served.c.question,
                served.c.answer,
                served.c.version,
                served.c.explored,
                feedback.c.correct,
                feedback.c.reference,
                func.coalesce(spent.c.cost, 0.0).label("cost"),
                func.coalesce(spent.c.shadow, 0.0).label("shadow_cost"),
            )
            .outerjoin(feedback, feedback.c.response_id == served.c.response_id)
            .outerjoin(spent, spent.c.response_id == served.c.response_id)
            .order_by(served.c.created_at, served.c.response_id)
        )
        with self.engine.connect() as db:
            return [dict(row._mapping) for row in db.execute(query)]

    @contextmanager
    def refit_lock(self) -> Iterator[bool]:
        """Whether this process may refit now: on PostgreSQL, replicas share the store and one
        holds the advisory lock while it refits (released on exit, or when its connection dies
        with it); SQLite is one process's store, whose learner never runs two refits at once."""
        if self.engine.dialect.name != "postgresql":
            yield True
            return
        with self.engine.connect() as db:
            held = bool(
                db.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": REFIT_LOCK}).scalar()
            )
            try:
                yield held
            finally:
                if held:
                    db.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": REFIT_LOCK})
                db.commit()

    def close(self) -> None:
        self.traces.close()
