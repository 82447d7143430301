"""Local caches in SQLite files: `open_cache_db` (how every cache file is opened) and the optional
response cache, keyed by model, messages and sampling parameters."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from consortium.core.types import Completion, Message, Usage


def open_cache_db(path: str | Path, schema: str) -> sqlite3.Connection:
    """A cache file (its folder made if missing) in WAL mode, with `schema` (CREATE TABLE IF NOT
    EXISTS …) applied. Callers serialize their own access; any thread may use the connection."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable enough, no fsync per put
    db.execute(schema)
    db.commit()
    return db


def cache_key(model: str, messages: Sequence[Message], params: Mapping[str, Any]) -> str:
    payload = json.dumps(
        {"model": model, "messages": list(messages), "params": dict(params)},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_cache_db(
            self.path,
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, text TEXT,"
            " prompt_tokens INTEGER, completion_tokens INTEGER, finish_reason TEXT)",
        )

    def get(self, key: str) -> Completion | None:
        row = self._db.execute(
            "SELECT model, text, prompt_tokens, completion_tokens, finish_reason"
            " FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        model, text, prompt_tokens, completion_tokens, finish_reason = row
        return Completion(
            text, model, Usage(prompt_tokens, completion_tokens), 0.0, finish_reason, cached=True
        )

    def put(self, key: str, completion: Completion) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
            (
                key,
                completion.model,
                completion.text,
                completion.usage.prompt_tokens,
                completion.usage.completion_tokens,
                completion.finish_reason,
            ),
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()
