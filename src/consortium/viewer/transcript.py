"""A task's transcript as HTML: per policy, the grade, the workflow drawn (if any), an
answer-aware policy's stages, then every call turn by turn (model, role, what it saw, its answer,
the extracted answer, the verdict, tokens, cost, latency).

It renders whatever calls the store holds: single calls, TRINITY turns (thinker, worker,
verifier with verdicts), Conductor and template workflows (conductor, worker steps, inner runs).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from consortium.core.answers import stated_answer
from consortium.viewer.dag import dag_svg, traced_workflows
from consortium.viewer.html import Palette
from consortium.viewer.stages import NOT_READ, readings, stages_html, submitted_reading

ANSWERING = ("worker", "fallback")
"""Roles whose reply is an answer (a thinker plans, a verifier gives a verdict, a conductor
writes a workflow): only theirs get an extracted answer."""


def _answer_read(read: str | None, text: str) -> str | None:
    """The answer shown as read from `text`: the policy's reader's (`read`, from its stages)
    where it has one, else the answer the text states ("The answer is X"); None: neither (a
    reply whose answer only its grader reads, e.g. a boxed one, shows none rather than itself)."""
    if read is not None:
        return read if read != NOT_READ else "none (the policy's reader found no answer)"
    return stated_answer(text)


def _saw(call: dict[str, Any]) -> str:
    try:
        messages = json.loads(call["messages"] or "[]")
    except ValueError:
        messages = []
    parts = []
    for message in messages if isinstance(messages, list) else []:
        role = escape(str(message.get("role", "?")))
        parts.append(f"<b>[{role}]</b> {escape(str(message.get('content', '')))}")
    return "\n\n".join(parts)


def _returning_call(calls: Sequence[dict[str, Any]], answer: str | None) -> int | None:
    """The index of the call whose reply was returned: the first with the answer's text (the
    store keeps the answer's text, not its call; a later call that repeats the text, such as a
    judge replayed with a voter's recorded reply, did not originate it)."""
    if answer is None:
        return None
    return next((i for i, call in enumerate(calls) if (call["response"] or "") == answer), None)


def turn_html(
    number: int, call: dict[str, Any], palette: Palette, returned: bool, read: str | None = None
) -> str:
    """One call; `read`: the answer the policy's reader took from its reply (`stages.readings`)."""
    role = call["role"] or "worker"
    response = call["response"] or ""
    facts = [
        f"turn {call['turn']}" if call["turn"] is not None else "",
        f"verdict <b class='verdict'>{escape(call['verdict'])}</b>" if call["verdict"] else "",
        f"{call['prompt_tokens'] or 0} in + {call['completion_tokens'] or 0} out tokens",
        f"${call['cost'] or 0:.6f}",
        f"{1000 * (call['latency'] or 0):.0f} ms",
        "cached" if call["cached"] else "",
        f"stands in for {escape(call['fallback_from'])}" if call.get("fallback_from") else "",
    ]
    badge = " · <b class='ok'>returned as the answer</b>" if returned else ""
    error = f"<p class='bad'>error: {escape(call['error'])}</p>" if call["error"] else ""
    answers = role.split("@")[0] in ANSWERING
    found = _answer_read(read, response) if answers and response else None
    extracted = (
        f"<div>extracted answer: <span class='extracted'>{escape(found)}</span></div>"
        if found is not None
        else ""
    )
    return (
        f"<div class='turn{' returned' if returned else ''}' data-model='{escape(call['model'])}' "
        f"data-role='{escape(role)}' style='border-left-color:{palette(call['model'])}'>"
        f"<div class='head'><b>{number}. {escape(call['model'])}</b> as <i>{escape(role)}</i> · "
        f"{' · '.join(f for f in facts if f)}{badge}</div>{error}"
        f"<details><summary>what it saw</summary><pre class='saw'>{_saw(call)}</pre></details>"
        f"<details open><summary>its answer</summary><pre class='answer'>{escape(response)}"
        f"</pre></details>{extracted}</div>"
    )


def grade_html(result: dict[str, Any] | None, read: str | None = None) -> str:
    """The grader's verdict; `read`: the answer the policy's reader took from what it
    submitted (from its stages)."""
    if result is None:
        return (
            "<div class='grade'>no graded result for this policy (the run did not finish it)</div>"
        )
    verdict = "<b class='ok'>right</b>" if result["correct"] else "<b class='bad'>wrong</b>"
    found = _answer_read(read, result["answer"] or "")
    shown = ""
    if found is not None:
        shown = f"<br>final answer read: <span class='extracted'>{escape(found)}</span>"
    error = f" · error: {escape(result['error'])}" if result["error"] else ""
    stored_reference = result.get("reference")
    reference = (
        f" · reference: <span class='reference'>{escape(stored_reference)}</span>"
        if stored_reference
        else ""
    )
    return (
        f"<div class='grade' data-correct='{int(bool(result['correct']))}'>grader's verdict: "
        f"{verdict} · score {result['score'] or 0:g} · dataset {escape(result['dataset'] or '')}"
        f" · {result['calls']} calls · {result['tokens']} tokens · ${result['cost'] or 0:.6f}"
        f"{error}{shown}{reference} · grader: {escape(result['detail'] or '')}</div>"
    )


def policy_section(
    policy: str,
    calls: Sequence[dict[str, Any]],
    result: dict[str, Any] | None,
    palette: Palette,
    stages: Sequence[dict[str, Any]] = (),
) -> str:
    answer = result["answer"] if result else None
    workflows = [w for w in traced_workflows(calls) if len(w.steps) > 1]  # one call: no graph
    drawn = ""
    if workflows:
        drawn = "".join(
            f"<p class='muted'>workflow{f' (inner, depth {w.depth})' if w.depth else ''}: "
            f"{len(w.steps)} steps; each box names its model and the steps it sees</p>"
            + dag_svg(w, palette)
            for w in workflows
        )
    returning = _returning_call(calls, answer)
    read = readings(calls, stages, returning)
    turns = "".join(
        turn_html(i, call, palette, i - 1 == returning, read[i - 1])
        for i, call in enumerate(calls, 1)
    )
    return (
        f"<section class='policy' data-policy='{escape(policy)}'><h2>{escape(policy)}</h2>"
        f"{grade_html(result, submitted_reading(stages))}{drawn}{stages_html(stages)}"
        f"<div class='transcript'>{turns}</div></section>"
    )
