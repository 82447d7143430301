"""One candidate of a round tried: its policy folders written, measured on the round's tuning
and held-out batches, judged by the guards against the incumbent on the held-out one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from consortium.evaluation.results import TaskResult
from consortium.evolve.answer_folders import CandidateFolder, with_measured_figures, write_candidate
from consortium.evolve.guards import GuardConfig, judge
from consortium.evolve.library import ChangeRecord, ClusterRecord
from consortium.evolve.measure import Evaluator, accuracy, cluster_records, measured
from consortium.evolve.proposal import Proposal
from consortium.evolve.state import Candidate
from consortium.tasks.base import Task


@dataclass(frozen=True)
class RoundBatches:
    """A round's batches and the incumbent's results on them, which every candidate meets."""

    round: int
    incumbent_id: str
    tuning: list[Task]
    heldout: list[Task]
    incumbent_tuning: list[TaskResult]
    incumbent_heldout: list[TaskResult]


@dataclass
class Trial:
    """What trying one proposal produced: the candidate for the round's summary, the change
    and the per-cluster rows for the library, and its folders with their measured figures."""

    candidate: Candidate
    change: ChangeRecord
    rows: list[ClusterRecord]
    folders: tuple[CandidateFolder, ...]

    @property
    def rank(self) -> tuple[float, float]:
        """Among adoptable changes: the largest held-out gain, then the cheapest."""
        evidence = self.candidate.evidence
        return (evidence.difference, -evidence.candidate_cost)


async def try_proposal(
    proposal: Proposal, batches: RoundBatches, evaluator: Evaluator, guard: GuardConfig
) -> Trial:
    strategy = proposal.strategy
    for folder in proposal.folders:
        write_candidate(folder)
    tuning = await evaluator.strategy(strategy, batches.tuning, "tuning")
    heldout = await evaluator.strategy(strategy, batches.heldout, "heldout")
    folders = tuple(
        with_measured_figures(folder, tuning, heldout, batches.round) for folder in proposal.folders
    )
    tuning_difference = accuracy(tuning) - accuracy(batches.incumbent_tuning)
    decision = judge(
        measured(batches.incumbent_heldout, guard.cost),
        measured(heldout, guard.cost),
        guard,
        tuning_difference,
    )
    change = ChangeRecord(
        batches.incumbent_id,
        strategy.id,
        proposal.proposer,
        proposal.rationale,
        decision.adopted,
        decision.reason,
        decision.evidence.model_dump(),
    )
    candidate = Candidate(
        strategy_id=strategy.id,
        strategy=strategy,
        proposer=proposal.proposer,
        rationale=proposal.rationale,
        tuning_accuracy=accuracy(tuning),
        adopted=decision.adopted,
        reason=decision.reason,
        evidence=decision.evidence,
    )
    rows = cluster_records(strategy.id, "tuning", tuning)
    rows += cluster_records(strategy.id, "heldout", heldout)
    return Trial(candidate, change, rows, folders)


def best_adoptable(trials: Sequence[Trial]) -> Trial | None:
    """The adoptable trial of the highest rank (the first of equals), or None."""
    adopted: Trial | None = None
    for trial in trials:
        if trial.candidate.adopted and (adopted is None or trial.rank > adopted.rank):
            adopted = trial
    return adopted
