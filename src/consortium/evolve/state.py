"""The evolve run's state, as OUT/state.json holds it: settings, the incumbent, every finished
round and the final comparison. Written after each round; a resumed loop reads it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from consortium.coord.strategy import Strategy
from consortium.evolve.guards import Evidence


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Named(_Record):
    # A base of StrategyResult listed last, so that these two fields come first in its JSON.
    strategy_id: str
    describe: list[str]


class SplitSummary(_Record):
    """One policy on a batch of tasks: `evaluate.summarise` per task."""

    tasks: int
    accuracy: float
    """Over all tasks (per_cluster holds each cluster's)."""
    cost_per_task: float
    calls_per_task: float
    tokens_per_task: float
    errors: int
    per_cluster: dict[str, float]
    seconds_per_task: float = 0.0
    """Mean wall-clock seconds of a task (0 in a state written before it was measured)."""

    def per_task(self, measure: str) -> float:
        """The mean cost per task in `measure` (usd, tokens or seconds)."""
        if measure == "tokens":
            return self.tokens_per_task
        if measure == "seconds":
            return self.seconds_per_task
        return self.cost_per_task


class StrategyResult(SplitSummary, _Named):
    """A strategy of the lineage in the final comparison."""


class ClusterCollaboration(_Record):
    """How the incumbent's policies worked together on one cluster of the held-out batch."""

    tasks: int
    accuracy: float
    cost_per_task: float
    calls_per_task: float
    escalation_rate: float
    disagreement_rate: float | None
    """Among tasks where a check policy ran; None where none ran."""
    right_answers_by: dict[str, int]
    """Policy spec -> right answers it gave."""
    calls_by_model_role: dict[str, int]
    """"model/role" -> calls."""
    verifier_precision: float | None
    verifier_recall: float | None
    errors: int


class Candidate(_Record):
    """A proposed strategy, measured and judged in one round."""

    strategy_id: str
    strategy: Strategy
    proposer: str
    rationale: str
    tuning_accuracy: float
    adopted: bool
    """Whether it became the incumbent (of several adoptable ones, only the best does)."""
    reason: str
    evidence: Evidence


class RoundSummary(_Record):
    round: int
    run_id: str
    incumbent_id: str
    incumbent: list[str]
    """The incumbent at the start of the round, described line by line."""
    tuning: SplitSummary
    heldout: SplitSummary
    collaboration: dict[str, ClusterCollaboration]
    candidates: list[Candidate]
    adopted: str | None
    """Id of the strategy adopted in this round."""
    overfit_candidates: int
    """Candidates that gained where they were tuned and lost where they were not."""
    served: dict[str, str] = {}
    """Cluster -> the policy folder of the answer-aware policy adopted for it this round
    (`consortium serve --policy FOLDER` takes it)."""


class FinalComparison(_Record):
    rounds: int
    """Rounds finished when it was measured (a resumed run with more rounds measures again)."""
    run_id: str
    tasks: int
    independent: bool = False
    """Whether its tasks are a final pool no decision saw (else the whole held-out pool)."""
    strategies: list[StrategyResult]
    """The start, then each adopted strategy."""
    singles: dict[str, SplitSummary]
    first_vs_final: Evidence


class EvolveState(_Record):
    evolve_id: str
    config: dict[str, Any]
    """`EvolveConfig.fingerprint()` as JSON: what a resumed run must share."""
    pool: str
    tasks: str
    start: Strategy | None
    """The first incumbent; None until the first round picks the best single model."""
    incumbent: Strategy | None
    rounds: list[RoundSummary]
    final: FinalComparison | None

    @classmethod
    def load(cls, path: Path) -> EvolveState:
        return cls.model_validate_json(path.read_text())

    def serving(self) -> dict[str, str]:
        """Per cluster, the policy folder of the adopted answer-aware policy that still answers
        it in the incumbent (a later adoption for that cluster replaces it)."""
        found: dict[str, str] = {}
        incumbent = self.incumbent
        for summary in self.rounds:
            adopted = next((c for c in summary.candidates if c.adopted), None)
            for cluster, folder in summary.served.items():
                if (
                    adopted
                    and incumbent
                    and adopted.strategy.plan_for(cluster) == incumbent.plan_for(cluster)
                ):
                    found[cluster] = folder
        return found

    def save(self, path: Path) -> None:
        """Atomically, as `json.dumps(..., indent=1)` writes it."""
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.model_dump(), indent=1))
        temporary.replace(path)
