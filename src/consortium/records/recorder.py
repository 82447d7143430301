"""`consortium record`: every model of a pool on a task set, N samples each, written in the
records format. Each finished call is appended to a journal (one JSON line, flushed) before the
next is counted, so a run killed at any point resumes without asking twice or losing a call, and
the finished folder is the one an uninterrupted run writes (rows sorted, columns fixed; only
`latency_s`, a measured wall time, differs between runs). With a trace store, each call made is
also a call of a run of kind `record` there (calls found in the journal are not traced again)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consortium.core.errors import AgentError
from consortium.core.tokens import estimate_tokens
from consortium.core.types import user
from consortium.pool import build_agent
from consortium.pool.base import Agent
from consortium.pool.config import ModelConfig, PoolConfig
from consortium.records.answers import answer_of, task_reference
from consortium.records.call_traces import call_record
from consortium.records.errors import RecordsError
from consortium.records.live_pool import live_pool_provenance
from consortium.records.rows import OutputRow
from consortium.records.sampling_journal import journal_sampling
from consortium.records.schema import (
    DATASET_KINDS,
    SCHEMA_VERSION,
    AnswerKind,
    Manifest,
    Sampling,
)
from consortium.records.split import split_rule
from consortium.records.store import Records, write_records
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task, TaskSet

JOURNAL = "journal.jsonl"
STARTED = "journal.started"
"""The date the run began: the prices' date in the manifest, the same after a resume."""
Key = tuple[str, str, int]
Progress = Callable[[int, int, float], None]
"""(calls done, calls in all, USD spent)."""


@dataclass(frozen=True)
class RecordRequest:
    pool: PoolConfig
    tasks: TaskSet
    out: Path
    samples: int = 1
    models: list[str] | None = None
    concurrency: int | None = None
    """Calls in flight per model (default: each model's max_concurrency in the pool file)."""
    max_cost: float | None = None
    resume: bool = False
    temperature: float | None = None
    dataset: str | None = None
    kind: AnswerKind | None = None
    pool_source: str = "pool"
    created_by: str = "consortium record"
    traces: str | None = None
    """Trace store URL each call made is written to (None: none)."""


@dataclass
class RecordResult:
    records: Records
    calls: int
    resumed: int
    """Calls found done in the journal and not made again."""
    skipped_for_budget: int
    spent: float
    errors: int
    journal: Path
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None
    """The trace store's run holding this recording's calls (None without a store)."""


def read_journal(path: Path) -> dict[Key, OutputRow]:
    """The finished calls; a torn last line (the process died while writing it) is cut off."""
    done: dict[Key, OutputRow] = {}
    if not path.exists():
        return done
    data = path.read_bytes()
    good = 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            row = OutputRow(**json.loads(line))
        except (json.JSONDecodeError, TypeError) as error:
            raise RecordsError(f"{path}: a damaged line in the journal ({error})") from None
        done[(row.question_id, row.model, row.sample)] = row
        good += len(line)
    if good < len(data):
        with path.open("r+b") as handle:
            handle.truncate(good)
    return done


class _Recorder:
    def __init__(
        self,
        request: RecordRequest,
        progress: Progress | None,
        traces: tuple[TraceStore, str] | None = None,
    ) -> None:
        self.request = request
        self.progress = progress
        self.traces = traces
        """The store and the run id each finished call is traced under."""
        tasks = request.tasks.tasks
        self.dataset = request.dataset or tasks[0].dataset
        self.kind: AnswerKind = request.kind or DATASET_KINDS.get(tasks[0].dataset, "text")
        self.spent = 0.0
        self.reserved = 0.0
        self.skipped = 0
        self.done = 0
        self.total = 0

    def cost(self, config: ModelConfig, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * config.price_in + tokens_out * config.price_out) / 1e6

    async def call(
        self, agent: Agent, config: ModelConfig, task: Task, sample: int
    ) -> OutputRow | None:
        reserve = self.cost(config, estimate_tokens(task.question), config.max_tokens)
        limit = self.request.max_cost
        if limit is not None and self.spent + self.reserved + reserve > limit:
            self.skipped += 1
            return None
        self.reserved += reserve
        params: dict[str, Any] = {"seed": sample}
        if self.request.temperature is not None:
            params["temperature"] = self.request.temperature
        started = time.monotonic()
        try:
            completion = await agent.chat([user(task.question)], **params)
        except AgentError as error:
            self.reserved -= reserve
            return self.row(
                task, config, sample, None, 0, 0, True, time.monotonic() - started, str(error)
            )
        self.reserved -= reserve
        usage = completion.usage
        tokens_in = usage.prompt_tokens or estimate_tokens(task.question)
        tokens_out = usage.completion_tokens or estimate_tokens(completion.text)
        estimated = usage.estimated or not (usage.prompt_tokens and usage.completion_tokens)
        return self.row(
            task,
            config,
            sample,
            completion.text,
            tokens_in,
            tokens_out,
            estimated,
            completion.latency or time.monotonic() - started,
            None,
        )

    def row(
        self,
        task: Task,
        config: ModelConfig,
        sample: int,
        text: str | None,
        tokens_in: int,
        tokens_out: int,
        estimated: bool,
        latency: float,
        error: str | None,
    ) -> OutputRow:
        correct = None
        if text is not None:
            correct = self.request.tasks.grader.grade(task, text).correct
        cost = self.cost(config, tokens_in, tokens_out)
        return OutputRow(
            question_id=task.id,
            question=task.question,
            reference=task_reference(task),
            model=config.name,
            sample=sample,
            response=text,
            answer=answer_of(self.kind, task, text) if text is not None else None,
            correct=correct,
            source_correct=None,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tokens_estimated=estimated,
            cost_usd=cost,
            cost_estimated=True,
            latency_s=round(latency, 3),
            error=error,
        )

    async def run(
        self, configs: list[ModelConfig], done: dict[Key, OutputRow], journal: Path
    ) -> None:
        self.spent = sum(row.cost_usd for row in done.values())
        pending = {
            config.name: [
                (task, sample)
                for task in self.request.tasks.tasks
                for sample in range(self.request.samples)
                if (task.id, config.name, sample) not in done
            ]
            for config in configs
        }
        self.total = len(self.request.tasks.tasks) * self.request.samples * len(configs)
        self.done = len(done)
        self.report()
        with journal.open("a", encoding="utf-8") as handle:

            async def worker(
                agent: Agent, config: ModelConfig, queue: list[tuple[Task, int]]
            ) -> None:
                while queue:
                    task, sample = queue.pop(0)
                    row = await self.call(agent, config, task, sample)
                    if row is None:
                        continue
                    handle.write(json.dumps(row_dict(row), ensure_ascii=False) + "\n")
                    handle.flush()
                    self.trace(row)
                    self.spent += row.cost_usd
                    self.done += 1
                    done[(row.question_id, row.model, row.sample)] = row
                    self.report()

            agents = {config.name: build_agent(config) for config in configs}
            try:
                workers = [
                    worker(agents[config.name], config, pending[config.name])
                    for config in configs
                    for _ in range(self.request.concurrency or config.max_concurrency)
                ]
                await asyncio.gather(*workers)
            finally:
                for agent in agents.values():
                    await agent.aclose()

    def trace(self, row: OutputRow) -> None:
        """The call behind `row` in the trace store, after the journal has it."""
        if self.traces is not None:
            store, run_id = self.traces
            store.record_call(call_record(row, run_id))

    def report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total, self.spent)


def row_dict(row: OutputRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in OutputRow.__dataclass_fields__}


def _started_date(path: Path) -> str:
    """The date of the run's first start, written then and read back on every resume."""
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    today = dt.date.today().isoformat()
    path.write_text(today + "\n", encoding="utf-8")
    return today


def _sampling(request: RecordRequest, configs: list[ModelConfig]) -> Sampling:
    """What this run sends with each call (`_Recorder.call`; `max_tokens` is the pool's)."""
    return Sampling(
        samples=request.samples,
        temperature=request.temperature,
        max_tokens={c.name: c.max_tokens for c in configs},
    )


def record(request: RecordRequest, progress: Progress | None = None) -> RecordResult:
    """Run the calls not yet journaled, then write the folder (manifest + outputs.parquet)."""
    if request.samples < 1:
        raise RecordsError("--samples must be 1 or more")
    names = request.models or [m.name for m in request.pool.models]
    configs = [request.pool.get(name) for name in names]
    out = request.out
    journal = out / JOURNAL
    if (out / JOURNAL).exists() and not request.resume:
        raise RecordsError(
            f"{journal} exists: pass --resume to continue that run, or another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    sampling = journal_sampling(out, _sampling(request, configs), JOURNAL)
    started = _started_date(out / STARTED)
    done = read_journal(journal)
    resumed = len(done)
    run_id = None
    if request.traces is None:
        recorder = _Recorder(request, progress)
        asyncio.run(recorder.run(configs, done, journal))
    else:
        store = TraceStore(request.traces)
        config = {
            "out": str(out),
            "samples": request.samples,
            "temperature": request.temperature,
            "models": names,
        }
        try:
            with store.running("record", pool=request.pool_source, config=config) as run:
                run_id = run.run_id
                recorder = _Recorder(request, progress, (store, run_id))
                asyncio.run(recorder.run(configs, done, journal))
                run.summary = {"calls": recorder.done - resumed, "resumed": resumed}
        finally:
            store.close()
    kept = {name: sampling.max_tokens[name] for name in names}
    manifest = _manifest(
        request, recorder, configs, started, sampling.model_copy(update={"max_tokens": kept})
    )
    wanted = {
        (task.id, name, sample)
        for task in request.tasks.tasks
        for name in names
        for sample in range(request.samples)
    }
    # a journal may hold calls of a larger run (other models, more samples): not this folder's
    rows = [done[key] for key in sorted(done) if key in wanted]
    records = write_records(out, manifest, rows)
    return RecordResult(
        records,
        len(done) - resumed,
        resumed,
        recorder.skipped,
        recorder.spent,
        sum(row.error is not None for row in rows),
        journal,
        run_id=run_id,
    )


def _manifest(
    request: RecordRequest,
    recorder: _Recorder,
    configs: list[ModelConfig],
    started: str,
    sampling: Sampling,
) -> Manifest:
    return Manifest(
        schema_version=SCHEMA_VERSION,
        dataset=recorder.dataset,
        answer_kind=recorder.kind,
        **live_pool_provenance(
            configs, request.pool_source, JOURNAL, started, request.tasks.grader
        ),
        split=split_rule(),
        models=[c.name for c in configs],
        questions=len(request.tasks.tasks),
        notes=[
            f"{request.samples} samples per question and model; sample k sent with seed=k",
            "cost = tokens (as the endpoint reported them, else estimated) × the pool's prices",
        ],
        created_by=request.created_by,
        sampling=sampling,
    )
