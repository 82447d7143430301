"""What a learning server's folder says of its past (the viewer's learning page): each adopted
version with the refit it came from and its evidence, the refits that adopted nothing and why,
and the traffic in windows of served requests (served, labelled, right, $, the versions that
answered). A refit is placed by the labels it counted (its folder `refits/rNNNNNN`), a version
by the first request it answered: counts of the traffic, not wall time."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consortium.coord.answers.folder import read_policy
from consortium.records.grading import grade_text
from consortium.records.schema import AnswerKind
from consortium.serve.learn import versions
from consortium.serve.learn.learner import REFITS, answer_kind_of
from consortium.serve.learn.refit import DECISION
from consortium.serve.learn.store import TrafficStore, store_url

WINDOW = 50
"""Served requests per window of the learning page."""


@dataclass(frozen=True)
class Refit:
    """One judged refit: `labelled` the labels it counted, `evidence` the guard's paired
    comparison on the held-out part (empty when it got no candidate that far)."""

    labelled: int
    adopted: bool
    reason: str
    incumbent: str
    candidate: str | None
    evidence: dict[str, Any]


@dataclass(frozen=True)
class Version:
    """A policy version: `refit` the one that adopted it (None for the start policy, v0),
    `first_request` the number of the first served request it answered (None: none yet)."""

    name: str
    kind: str
    policy: str
    replaces: str | None
    refit: Refit | None
    first_request: int | None


@dataclass
class Window:
    """Served requests `first`..`first + served - 1` (numbered from 1, in the order served)."""

    first: int
    served: int = 0
    labelled: int = 0
    right: int = 0
    cost: float = 0.0
    shadow_cost: float = 0.0
    versions: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        """The share right of the labelled requests (None: none labelled)."""
        return self.right / self.labelled if self.labelled else None

    @property
    def cost_per_request(self) -> float:
        return self.cost / self.served if self.served else 0.0


@dataclass(frozen=True)
class History:
    versions: list[Version]
    refused: list[Refit]
    windows: list[Window]
    window: int
    """Served requests per window (the last may hold fewer)."""

    @property
    def served(self) -> int:
        return sum(w.served for w in self.windows)

    @property
    def labelled(self) -> int:
        return sum(w.labelled for w in self.windows)


def read_history(folder: Path, traces: str, window: int = WINDOW) -> History:
    kind = answer_kind_of(folder)
    store = TrafficStore(store_url(folder, traces))
    try:
        served = store.history()
    finally:
        store.close()
    refits = _refits(folder)
    adopted_by = {j.folder: j.refit for j in refits if j.refit.adopted}
    found = [_version(folder, n, adopted_by, served) for n in versions.adopted(folder)]
    start_name = refits[0].refit.incumbent if refits else ""  # the first refit's incumbent
    start = Version("v0", "", start_name, None, None, _first_request(served, "v0"))
    refused = [j.refit for j in refits if not j.refit.adopted]
    return History([start, *found], refused, _windows(served, kind, window), window)


@dataclass(frozen=True)
class _Judged:
    refit: Refit
    folder: str
    """The name of the refit's folder (rNNNNNN), which a version's evidence names."""


def _refits(folder: Path) -> list[_Judged]:
    """Every refit that wrote its decision, by the labels it counted."""
    root = folder / REFITS
    judged = []
    for path in sorted(root.glob(f"r*/{DECISION}")) if root.is_dir() else []:
        decision = json.loads(path.read_text(encoding="utf-8"))
        refit = Refit(
            labelled=int(path.parent.name[1:]),
            adopted=bool(decision.get("adopted")),
            reason=str(decision.get("reason", "")),
            incumbent=str(decision.get("incumbent", "")),
            candidate=decision.get("candidate"),
            evidence=dict(decision.get("evidence") or {}),
        )
        judged.append(_Judged(refit, path.parent.name))
    return sorted(judged, key=lambda j: j.refit.labelled)


def _version(
    folder: Path, number: int, adopted_by: dict[str, Refit], served: list[dict[str, Any]]
) -> Version:
    path = versions.policies_dir(folder) / f"v{number}"
    evidence = json.loads((path / versions.EVIDENCE).read_text(encoding="utf-8"))
    policy = read_policy(path)
    return Version(
        name=path.name,
        kind=policy.kind,
        policy=policy.name,
        replaces=evidence.get("replaces"),
        refit=adopted_by.get(Path(str(evidence.get("records", ""))).name),
        first_request=_first_request(served, path.name),
    )


def _first_request(served: list[dict[str, Any]], version: str) -> int | None:
    return next((i for i, r in enumerate(served, 1) if r["version"] == version), None)


def _windows(served: list[dict[str, Any]], kind: AnswerKind, size: int) -> list[Window]:
    windows: list[Window] = []
    for index, request in enumerate(served):
        if index % size == 0:
            windows.append(Window(first=index + 1))
        current = windows[-1]
        current.served += 1
        current.cost += float(request["cost"])
        current.shadow_cost += float(request["shadow_cost"])
        if request["version"] not in current.versions:
            current.versions.append(request["version"])
        right = _right(kind, request)
        if right is not None:
            current.labelled += 1
            current.right += int(right)
    return windows


def _right(kind: AnswerKind, request: dict[str, Any]) -> bool | None:
    """Whether the served answer was right by its label (None: unlabelled); a reference is
    graded by the kind's grader, as a refit grades the request's samples."""
    if request["correct"] is not None:
        return bool(request["correct"])
    if request["reference"] is None:
        return None
    graded = grade_text(kind, request["reference"], request["answer"], question=request["question"])
    return bool(graded.correct)
