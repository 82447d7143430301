"""An answer-aware policy's stages on a task page: each sample it asked for (stage, model,
sample, how the call went, the answer's agreement key, its check, the scorer's probability, the
answer it submitted) and what the rule decided after each stage, ending with why it stopped."""

from __future__ import annotations

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
