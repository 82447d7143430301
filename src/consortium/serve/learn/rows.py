"""What a request served, as the request handler hands it over (`Served`: no copies, no rows
built on the event loop) and as the learning server's rows, which the writer thread builds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from consortium.runtime.caller import CallSummary
from consortium.serve.learn.store import ServedRequest


@dataclass(frozen=True, slots=True)
class Served:
    """One answered request; `calls` is handed over whole (nothing appends to it afterwards)."""

    response_id: str
    question: str
    answer: str
    answered_by: str | None
    version: str
    explored: bool
    created_at: float
    calls: Sequence[CallSummary]

    def rows(self) -> ServedRequest:
        """Its row of `learn_requests` and its calls' rows of `learn_outputs`."""
        request = {
            "response_id": self.response_id,
            "question": self.question,
            "answer": self.answer,
            "answered_by": self.answered_by,
            "version": self.version,
            "explored": self.explored,
            "created_at": self.created_at,
        }
        return ServedRequest(request, call_rows(self.response_id, self.calls, shadow=False))


def call_rows(response_id: str, made: Sequence[CallSummary], shadow: bool) -> list[dict[str, Any]]:
    """A request's calls as `learn_outputs` rows; a call sent without a seed is numbered by its
    model's earlier calls in the request."""
    counts: dict[str, int] = {}
    rows = []
    for call in made:
        index = counts.get(call.model, 0)
        counts[call.model] = index + 1
        rows.append(
            {
                "response_id": response_id,
                "model": call.model,
                "sample": call.sample if call.sample is not None else index,
                "response": None if call.failed else call.text,
                "tokens_in": call.prompt_tokens,
                "tokens_out": call.completion_tokens,
                "cost_usd": call.cost,
                "latency_s": call.latency,
                "error": call.error_kind if call.failed else None,
                "shadow": shadow,
            }
        )
    return rows
