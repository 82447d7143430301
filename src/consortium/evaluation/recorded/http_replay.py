"""The same multi-turn run over the HTTP replay server (consortium.replay, records folders): each
turn is a real chat request whose sample index is the number of earlier asks of that model
(x-consortium-sample), the answer is extracted from the served text by the records' graders, and
the Verifier's ACCEPT and the answer rule are applied as in `episodes`. Used to show that the
in-process simulation gives the same per-question outcome as the server (not for training)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from consortium.coord.answers.keys import agreement_for
from consortium.core.wire import SAMPLE_HEADER
from consortium.evaluation.recorded.episodes import VERIFIER
from consortium.records.grading import Verdict, grade_text
from consortium.records.schema import AnswerKind


@dataclass(frozen=True)
class HttpOutcome:
    accepted: bool
    correct: bool
    calls: int
    completion_tokens: int


def run_over_http(
    client: httpx.Client,
    question: str,
    reference: str,
    kind: AnswerKind,
    actions: Sequence[tuple[str, int]],
) -> HttpOutcome:
    """Play the (model name, role) actions of one run for one question (not code: the code
    Verifier calls no model)."""
    key, same = agreement_for(kind)
    asks: dict[str, int] = {}
    workers: list[Verdict] = []
    accepted = False
    tokens = 0

    def agree(first: str | None, second: str | None) -> bool:
        if first is None or second is None:
            return False
        a, b = key(first), key(second)
        if a is None or b is None:
            return False
        return a == b or (same is not None and same(a, b))

    def current() -> Verdict | None:
        answered = [(i, v) for i, v in enumerate(workers) if v.answer is not None]
        if not answered:
            return None
        best: tuple[int, int] = (-1, -1)
        chosen = None
        for i, v in answered:
            count = sum(agree(v.answer, w.answer) for _, w in answered)
            if (count, i) > best:
                best, chosen = (count, i), v
        return chosen

    for model, role in actions:
        index = asks.get(model, 0)
        asks[model] = index + 1
        reply = client.post(
            "/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": question}]},
            headers={SAMPLE_HEADER: str(index)},
        )
        reply.raise_for_status()
        body = reply.json()
        tokens += int(body["usage"]["completion_tokens"])
        verdict = grade_text(
            kind, reference, body["choices"][0]["message"]["content"], question=question
        )
        if role == VERIFIER:
            now = current()
            accepted = now is not None and agree(verdict.answer, now.answer)
            if accepted:
                break
        else:
            workers.append(verdict)
    final = current()
    return HttpOutcome(
        accepted, bool(final is not None and final.correct), sum(asks.values()), tokens
    )
