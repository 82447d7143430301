"""A recorded call as a row of the trace store, so that `consortium traces` and the viewer show a
recording's calls like any other run's: one call per (question, model, sample), the sample as its
turn."""

from __future__ import annotations

from consortium.core.types import user
from consortium.records.rows import OutputRow
from consortium.runtime.store_records import CallRecord

POLICY = "record"
"""The policy name a recording's calls carry in the trace store."""


def call_record(row: OutputRow, run_id: str) -> CallRecord:
    """The call behind a recorded row (its prompt is the question, sent as one user message)."""
    return CallRecord(
        run_id=run_id,
        model=row.model,
        messages=[user(row.question)],
        response=row.response,
        policy=POLICY,
        task_id=row.question_id,
        turn=row.sample,
        role="worker",
        prompt_tokens=row.tokens_in,
        completion_tokens=row.tokens_out,
        cost=row.cost_usd,
        latency=row.latency_s or 0.0,
        error=row.error,
    )
