"""The fields of an OpenAI chat request that `consortium serve` honours, and how; every other
field is refused by name, never silently ignored.

- `max_tokens` / `max_completion_tokens`, `temperature`, `top_p`, `stop`, `seed`: passed to every
  model call the request makes (a workflow's steps all get them; the last step's answer is the
  reply).
- `n`: that many independent runs of the policy, one choice each.
- `stream`, `stream_options`: server-sent events (the usage is always sent at the end).
- `user`: accepted and not used (an end-user id for the caller's own records).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_N = 8
"""Most runs one request may ask for (`n`): each is a whole ensemble run."""

IGNORED = frozenset({"model", "messages", "user"})
"""Read elsewhere (`model`, `messages`) or accepted without effect (`user`)."""

WHY_REFUSED = {
    "tools": "tool calls are not supported: the ensemble answers with text",
    "tool_choice": "tool calls are not supported: the ensemble answers with text",
    "functions": "function calls are not supported: the ensemble answers with text",
    "function_call": "function calls are not supported: the ensemble answers with text",
    "parallel_tool_calls": "tool calls are not supported: the ensemble answers with text",
    "response_format": "only {'type': 'text'} is supported: the policy's models are not "
    "constrained to a schema",
    "logprobs": "log-probabilities are not available: an answer can come from several models",
    "top_logprobs": "log-probabilities are not available: an answer can come from several models",
}


class RequestFieldError(ValueError):
    """A request field this server cannot honour; `field` names it."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.field = name


@dataclass(frozen=True)
class RequestOptions:
    call_params: dict[str, Any] = field(default_factory=dict)
    """Sampling and length fields passed to every model call of the request."""
    n: int = 1
    stream: bool = False


def _number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise RequestFieldError(name, f"must be a number from {low:g} to {high:g}")
    return float(value)


def _integer(body: dict[str, Any], name: str, low: int, high: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise RequestFieldError(name, f"must be an integer ≥ {low}")
    if high is not None and value > high:
        raise RequestFieldError(name, f"at most {high} (each one is a whole ensemble run)")
    return value


def _max_tokens(body: dict[str, Any]) -> int | None:
    given = {name: _integer(body, name, 1) for name in ("max_tokens", "max_completion_tokens")}
    values = {value for value in given.values() if value is not None}
    if len(values) > 1:
        raise RequestFieldError("max_completion_tokens", "differs from max_tokens; send one")
    return values.pop() if values else None


def _stop(body: dict[str, Any]) -> list[str] | str | None:
    value = body.get("stop")
    if value is None or isinstance(value, str):
        return value
    if (
        isinstance(value, list)
        and 0 < len(value) <= 4
        and all(isinstance(item, str) for item in value)
    ):
        return value
    raise RequestFieldError("stop", "must be a string or a list of up to 4 strings")


def _refuse_unknown(body: dict[str, Any]) -> None:
    known = IGNORED | {
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "n",
        "stream",
        "stream_options",
    }
    for name, value in body.items():
        if name in known or value is None:
            continue
        if name == "response_format" and value == {"type": "text"}:
            continue
        if name == "logprobs" and value is False:
            continue
        reason = WHY_REFUSED.get(name, "not supported by consortium serve")
        raise RequestFieldError(name, reason)


def request_options(body: dict[str, Any]) -> RequestOptions:
    """What a chat request asks of the ensemble; `RequestFieldError` for any field that cannot
    be honoured (the server answers 400 naming it)."""
    _refuse_unknown(body)
    call_params: dict[str, Any] = {}
    values = {
        "max_tokens": _max_tokens(body),
        "temperature": _number(body, "temperature", 0.0, 2.0),
        "top_p": _number(body, "top_p", 0.0, 1.0),
        "stop": _stop(body),
        "seed": _integer(body, "seed", -(2**63)),
    }
    call_params = {name: value for name, value in values.items() if value is not None}
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise RequestFieldError("stream", "must be true or false")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestFieldError("stream_options", "must be an object")
    n = _integer(body, "n", 1, MAX_N) or 1
    if n > 1 and stream:
        raise RequestFieldError("n", "more than one choice cannot be streamed; drop stream or n")
    return RequestOptions(call_params, n, stream)
