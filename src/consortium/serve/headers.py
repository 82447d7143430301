"""The `x-consortium-*` headers an answer of `consortium serve` carries: the names the server sets
and the help and docs list (one tuple, so that they cannot drift apart)."""

from __future__ import annotations

CALLS = "x-consortium-calls"
MODELS = "x-consortium-models"
ROLES = "x-consortium-roles"
COST = "x-consortium-cost"
TASK = "x-consortium-task"
RUN = "x-consortium-run"
ANSWERED_BY = "x-consortium-answered-by"
STOP = "x-consortium-stop"
FAILED = "x-consortium-failed"
POLICY_VERSION = "x-consortium-policy-version"
EXPLORED = "x-consortium-explored"

ANSWER_HEADERS: tuple[str, ...] = (
    CALLS, MODELS, ROLES, COST, TASK, RUN, ANSWERED_BY, STOP, FAILED, POLICY_VERSION, EXPLORED
)  # fmt: skip
"""Every header the server sets on an answer, in the order it sets them (the last five only
where they apply: the policy version and exploration under `serve --learn`); a header not named
here is not sent."""
