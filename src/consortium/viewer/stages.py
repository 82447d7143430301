"""An answer-aware policy's stages on a task page: each sample it asked for (stage, model,
sample, how the call went, the answer's agreement key, its check, the scorer's probability, the
answer it submitted) and what the rule decided after each stage, ending with why it stopped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from html import escape
from typing import Any

from consortium.viewer.html import num, table

HEADER = ["stage", "model", "sample", "call", "answer key", "check", "scorer p", "", "then"]


def _check(value: bool | None) -> str:
    if value is None:
        return ""
    return "<b class='ok'>passed</b>" if value else "<b class='bad'>failed</b>"


def stages_html(rows: Sequence[dict[str, Any]]) -> str:
    """The stages table of one policy on one task; empty when the policy stored none (every
    policy but the answer-aware ones)."""
    if not rows:
        return ""
    cells = [
        [
            num(str(row["stage"])),
            escape(row["model"]),
            num(str(row["sample"])),
            escape(row["status"]),
            f"<span class='answer-key'>{escape(row['answer'])}</span>" if row["answer"] else "",
            _check(row["checked"]),
            num(f"{row['score']:.3f}") if row["score"] is not None else "",
            "<b class='ok'>submitted</b>" if row["chosen"] else "",
            escape(row["decision"] or ""),
        ]
        for row in rows
    ]
    stops = [r["decision"] for r in rows if (r["decision"] or "").startswith("stop: ")]
    stop = f"<p class='stop'>{escape(stops[-1])}</p>" if stops else ""
    return (
        "<div class='stages'><p class='muted'>stages: each sample the policy asked for, the "
        "answer's agreement key (the key its class holds), its check and the scorer's "
        "probability where the rule has them, and what the rule decided next</p>"
        + table(HEADER, cells, "stages")
        + stop
        + "</div>"
    )


NOT_READ = ""
"""A reading of a reply in which the policy's reader found no answer."""


def readings(
    calls: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], returned: int | None
) -> list[str | None]:
    """Per call, the answer the policy's reader took from its reply, as its stages stored it (the
    agreement key of the row of the call's stage and model; NOT_READ where it read none; None
    where the policy stored no stages). The returned call's is the submitted row's; the samples
    of one model at one stage that read differently cannot be told apart (their calls are traced
    as they finish), so each of those calls shows every key they read."""
    if not rows:
        return [None] * len(calls)
    asked: dict[tuple[int, str], list[str]] = defaultdict(list)
    for row in rows:
        if row["status"] != "refused":
            asked[(row["stage"], row["model"])].append(row["answer"] or NOT_READ)
    submitted = submitted_reading(rows)
    found: list[str | None] = []
    for index, call in enumerate(calls):
        keys = list(dict.fromkeys(asked.get((call["turn"], call["model"]), [])))
        if index == returned and submitted is not None:
            found.append(submitted)
        else:
            found.append(" or ".join(k for k in keys if k) if keys else None)
    return found


def submitted_reading(rows: Sequence[dict[str, Any]]) -> str | None:
    """What the policy's reader took from the answer it submitted (None: it submitted none, or
    stored no stages)."""
    return next((row["answer"] or NOT_READ for row in rows if row["chosen"]), None)
