"""The trace store's schema: its tables (runs, calls, results, stages) and the covering indexes
the viewer's reads use."""

from __future__ import annotations

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
)

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
    Column("host", String(255)),
    Column("pid", Integer),
    Column("pid_token", String(80)),
)
"""`host`, `pid`, `pid_token`: the process running it (`runtime.liveness`), so that a run whose
process died shows as interrupted."""

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

stages = Table(
    "stages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), nullable=False),
    Column("policy", String(200)),
    Column("task_id", String(200)),
    Column("stage", Integer, nullable=False),
    Column("model", String(200), nullable=False),
    Column("sample", Integer),
    Column("status", String(20), nullable=False),
    Column("answer", Text),
    Column("answer_class", Integer),
    Column("checked", Boolean),
    Column("score", Float),
    Column("chosen", Boolean),
    Column("decision", Text),
    Column("created_at", Float, nullable=False),
    Index("ix_stages_run_task", "run_id", "task_id"),
)
"""What an answer-aware policy made of each sample it asked for (written beside its calls):
one row per sample, its stage (the decision that asked it: the calls' `turn`), how the call
went, the answer's agreement class and that class's representative key, its check, its scorer
probability, and what the rule decided after the stage (the stop reason after the last)."""

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
