"""What one served answer says about itself: OpenAI usage, the finish reason of the answering
call, who answered and why the policy stopped, the policy version (`serve --learn`), and the
same as the response headers `serve.headers.ANSWER_HEADERS` names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from consortium.coord.base import Outcome
from consortium.runtime.caller import TaskCaller
from consortium.serve import headers as names


def usage(callers: list[TaskCaller]) -> dict[str, int]:
    """OpenAI usage of every call the request made."""
    made = [call for caller in callers for call in caller.made]
    prompt = sum(c.prompt_tokens for c in made)
    completion = sum(c.completion_tokens for c in made)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def finish_reason(answer: str, caller: TaskCaller) -> str:
    """The finish_reason of the call whose text is the answer, as its endpoint said it ("length"
    where it cut the text at `max_tokens`); "stop" for an answer no call gave verbatim."""
    answering = [c for c in caller.made if not c.failed and c.text == answer]
    return (answering[-1].finish_reason if answering else None) or "stop"


def decided(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Who answered and why the policy stopped, where the policy says (answer-aware policies:
    'stop: accepted at 1.00', 'stop: escalated' …; a failed call it went on without)."""
    answered = [o.model for o in outcomes if o.model]
    stops = [n.removeprefix("stop: ") for o in outcomes for n in o.notes if n.startswith("stop: ")]
    skipped = [n for o in outcomes for n in o.notes if not n.startswith("stop: ")]
    decided: dict[str, Any] = {}
    if answered:
        decided["answered_by"] = answered
    if stops:
        decided["stop"] = stops
    if skipped:
        decided["notes"] = skipped
    return decided


def learning(version: str | None, explored: bool) -> dict[str, Any]:
    """The policy version that answered and whether the request was explored (`--learn`)."""
    said: dict[str, Any] = {}
    if version is not None:
        said["policy_version"] = version
    if explored:
        said["explored"] = True
    return said


def answer_headers(account: dict[str, Any]) -> dict[str, str]:
    """The accounting of one answer as response headers."""
    headers = {
        names.CALLS: str(account["calls"]),
        names.MODELS: ",".join(account["models"]),
        names.ROLES: ",".join(account["roles"]),
        names.COST: f"{account['cost']:.8f}",
        names.TASK: account["task_id"],
        names.RUN: account["run_id"],
    }
    if "answered_by" in account:
        headers[names.ANSWERED_BY] = ",".join(account["answered_by"])
    if "stop" in account:
        headers[names.STOP] = "; ".join(account["stop"])
    if "failed" in account:
        headers[names.FAILED] = ",".join(account["failed"])
    return named(headers | learning_headers(account))


def learning_headers(said: dict[str, Any]) -> dict[str, str]:
    """The headers of what `learning` said (a streamed answer sends them before its events)."""
    headers = {}
    if "policy_version" in said:
        headers[names.POLICY_VERSION] = said["policy_version"]
    if said.get("explored"):
        headers[names.EXPLORED] = "1"
    return headers


def named(headers: dict[str, str]) -> dict[str, str]:
    """Only the headers ANSWER_HEADERS names (what the help lists is all a client gets), in its
    order."""
    return {name: headers[name] for name in names.ANSWER_HEADERS if name in headers}
