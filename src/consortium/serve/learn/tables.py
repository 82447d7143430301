"""The learning server's tables, kept in the trace store's database (SQLite beside DIR by
default, the PostgreSQL store when serving on one): each served request, each of its calls as a
row of the records format, and the feedback each request received."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Integer, MetaData, String, Table, Text

metadata = MetaData()

served = Table(
    "learn_requests",
    metadata,
    Column("response_id", String(64), primary_key=True),
    Column("question", Text, nullable=False),
    Column("answer", Text),
    Column("answered_by", String(200)),
    Column("version", String(40), nullable=False),
    Column("explored", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
)
"""One served request, keyed by the `id` of the chat completion the client received; `version`
is the policy version that answered it."""

outputs = Table(
    "learn_outputs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("response_id", String(64), nullable=False, index=True),
    Column("model", String(200), nullable=False),
    Column("sample", Integer, nullable=False),
    Column("response", Text),
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("latency_s", Float),
    Column("error", Text),
    Column("shadow", Boolean, nullable=False),
)
"""One call of a served request, as the records format's row (`records.rows.OutputRow`) holds
it; `shadow`: an exploration call, recorded and never returned."""

feedback = Table(
    "learn_feedback",
    metadata,
    Column("response_id", String(64), primary_key=True),
    Column("correct", Boolean),
    Column("reference", Text),
    Column("created_at", Float, nullable=False),
)
"""What a client said of a response: a verdict on the answer it received, or a reference
answer its samples are graded against (one of the two)."""
