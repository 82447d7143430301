"""`make real`'s text and JSON: a row per task set and policy, then TRINITY's Verifier verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from consortium.reports.real_lms.request import POOL_NAME, Row


def real_lms_markdown(rows: Sequence[Row], counts: dict[str, int], command: str) -> str:
    """`counts`: the Verifier turns (`verifier_calls`, `parsed`, `accept`, `revise`)."""
    lines = [
        "# Real small language models in every collaboration pattern",
        "",
        f"Made by `{command}`. "
        f"Pool: {POOL_NAME}. Prices are 0 (local). The models are tiny: this shows real "
        "behaviour, calls and time, not quality.",
        "",
        "| tasks | policy | right | accuracy [95 % CI] | calls | tokens | errors | wall s | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        low, high = r.interval()
        lines.append(
            f"| {r.tasks} | {r.policy} | {r.correct}/{r.n} | {100 * r.accuracy:.1f} "
            f"[{100 * low:.1f}, {100 * high:.1f}] | {r.calls} | {r.tokens} | {r.errors} "
            f"| {r.wall_s:.0f} | {r.note} |"
        )
    parsed = counts["parsed"]
    total = counts["verifier_calls"]
    lines += [
        "",
        f"TRINITY's Verifier turns: {total}; a verdict was stated in {parsed} "
        f"({100 * parsed / max(total, 1):.0f} %): {counts['accept']} ACCEPT, "
        f"{counts['revise']} REVISE; the rest count as REVISE.",
        "",
    ]
    return "\n".join(lines)


def real_lms_json(rows: Sequence[Row], counts: dict[str, int]) -> dict[str, Any]:
    return {
        "pool": POOL_NAME,
        "rows": [asdict(r) | {"accuracy": r.accuracy} for r in rows],
        "verifier": counts,
    }
