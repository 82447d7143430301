"""`consortium record --protocol debate:…`: a debate played live on a pool's models for every
task, written as a records folder with turns (`records.schema.TURN_COLUMNS`) and its protocol in
the manifest, the same format as an imported debate: `consortium debates report` measures it,
`fit-gate` fits the rule of when to talk on it, and `replay serve` answers its turns."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from consortium.coord.debate.policy import DebateCoordinator, DebateRun
from consortium.pool import Pool
from consortium.pool.config import PoolConfig
from consortium.records.answers import answer_of, task_reference
from consortium.records.live_pool import live_pool_provenance
from consortium.records.rows import OutputRow
from consortium.records.schema import (
    SCHEMA_VERSION,
    Manifest,
    Protocol,
    turn_ref,
)
from consortium.records.split import split_rule
from consortium.records.store import Records, write_records
from consortium.records.task_kind import answer_kind_of
from consortium.runtime.budget import Budget, Limits
from consortium.runtime.caller import Caller
from consortium.tasks.base import Task, TaskSet

FINAL = (
    "the rule of consortium.coord.debate.rule: without agreement, the answer stated most often, "
    "ties to the lead's answer (none: the one stated first)"
)


@dataclass(frozen=True)
class DebateRecording:
    pool: PoolConfig
    tasks: TaskSet
    debate: DebateCoordinator
    out: Path
    pool_source: str = "pool"
    created_by: str = "consortium record --protocol debate"
    max_cost: float | None = None
    concurrency: int = 4


def _rows(task: Task, run: DebateRun, recording: DebateRecording) -> list[OutputRow]:
    kind = recording.debate.kind or answer_kind_of(task)
    n = len(recording.debate.rule.speakers)
    rows: list[OutputRow] = []
    for index, spoken in enumerate(run.spoken):
        reply = run.replies[index]
        config = recording.pool.get(spoken.speaker)
        sample = sum(1 for row in rows if row.model == spoken.speaker)
        tokens_in = reply.usage.prompt_tokens if reply else 0
        tokens_out = reply.usage.completion_tokens if reply else 0
        text = reply.text if reply else None
        rows.append(
            OutputRow(
                question_id=task.id,
                question=task.question,
                reference=task_reference(task),
                model=spoken.speaker,
                sample=sample,
                response=text,
                answer=answer_of(kind, task, text) if text is not None else None,
                correct=None if text is None else recording.tasks.grader.grade(task, text).correct,
                source_correct=None,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                tokens_estimated=reply is None or reply.usage.estimated,
                cost_usd=(tokens_in * config.price_in + tokens_out * config.price_out) / 1e6,
                cost_estimated=True,
                latency_s=round(reply.latency, 3) if reply else None,
                error=run.errors[index],
                turn=0 if index < n else index - n + 1,
                seen=() if index < n else tuple(turn_ref(r.model, r.sample) for r in rows),
            )
        )
    return rows


async def _play(recording: DebateRecording) -> list[OutputRow]:
    pool = Pool(recording.pool)
    budget = Budget(Limits(max_cost=recording.max_cost), label="recording")
    caller = Caller(pool, None, "record", budget=budget)
    gate = asyncio.Semaphore(recording.concurrency)

    async def one(task: Task) -> list[OutputRow]:
        async with gate:
            run = await recording.debate.debate(task, caller.for_task(task.id, "record"))
        return _rows(task, run, recording)

    try:
        done = await asyncio.gather(*(one(task) for task in recording.tasks.tasks))
    finally:
        await pool.aclose()
    return [row for rows in done for row in rows]


def record_debates(recording: DebateRecording) -> Records:
    """Play the debate on every task and write the folder."""
    rows = asyncio.run(_play(recording))
    rule = recording.debate.rule
    tasks = recording.tasks.tasks
    today = dt.date.today().isoformat()
    configs = [recording.pool.get(name) for name in rule.speakers]
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        dataset=tasks[0].dataset,
        answer_kind=recording.debate.kind or answer_kind_of(tasks[0]),
        **live_pool_provenance(configs, recording.pool_source, "", today, recording.tasks.grader),
        split=split_rule(),
        models=list(rule.speakers),
        questions=len(tasks),
        notes=[f"the debate {recording.debate.name}, played live on {today}"],
        created_by=recording.created_by,
        protocol=Protocol(
            kind="debate",
            speakers=list(rule.speakers),
            max_rounds=rule.rounds,
            run=f"recorded {today}",
            final=FINAL,
        ),
    )
    return write_records(recording.out, manifest, rows)
