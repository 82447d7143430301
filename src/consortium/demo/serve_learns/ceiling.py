"""What any guarded learner could show on a stream: the offline fits handed to the server's guard
as candidates, judged on the stream's own labelled requests.

The offline fits were fitted on the whole train split, these requests included, so what the guard
concludes of them is an upper bound for a learner, whose candidates are fitted on the labels that
came so far. Two bounds per set:

- `guard_ceiling`: the offline fit against a start policy on every labelled request of the stream
  (what a learner that knew the answer from the first request could prove by the end);
- `exploration_floor`: the least exploration for adopting the offline team from the cheapest
  model: every labelled request explored with exactly the team's own calls (nothing it does not
  ask), the guard asked after every label, the team serving from the answer its label came with,
  and no exploration after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evolve.guards import Decision, GuardConfig, Measured, judge


def _measured(run: PolicyRun, rows: Sequence[int]) -> Measured:
    picked = np.asarray(rows, dtype=int)
    return Measured.of(run.correct[picked], run.cost[picked], run.calls[picked])


def guard_ceiling(
    start: PolicyRun, offline: PolicyRun, labelled: Sequence[int], guard: GuardConfig
) -> Decision:
    """The guard's decision on `offline` against `start`, on the rows of the labelled requests."""
    return judge(_measured(start, labelled), _measured(offline, labelled), guard)


@dataclass(frozen=True)
class Floor:
    labels: int
    """Labelled (and explored) requests the guard needed."""
    adopted_at: int
    """The answer from which the team serves (its label's request plus the label delay)."""
    explore_usd: float
    stream_usd: float

    @property
    def share(self) -> float:
        return self.explore_usd / max(self.explore_usd + self.stream_usd, 1e-12)


def exploration_floor(
    start: PolicyRun,
    team: PolicyRun,
    order: Sequence[int],
    labelled: set[int],
    delay: int,
    guard: GuardConfig,
) -> Floor | None:
    """The least exploration share for adopting `team` from `start` on a stream of table rows
    `order` (None: the guard never adopts it on these labels). A labelled request costs the
    team's calls beyond the start's (what a shadow call must buy to play the team on it)."""
    explored: list[int] = []
    spent = 0.0
    for position, row in enumerate(order):
        if row not in labelled:
            continue
        explored.append(row)
        spent += max(float(team.cost[row] - start.cost[row]), 0.0)
        if not guard_ceiling(start, team, explored, guard).adopted:
            continue
        switch = min(position + delay, len(order))
        served = start.cost[list(order[:switch])].sum() + team.cost[list(order[switch:])].sum()
        return Floor(len(explored), switch, spent, float(served))
    return None
