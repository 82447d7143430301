"""`consortium evolve`: rounds of run → measure the collaboration → propose → guard → adopt.

Each round draws a tuning batch (proposers read it) and a held-out batch (guards judge on it),
both stratified by dataset and fixed by (seed, round). The round's state is written to
OUT/state.json only after its library rows are committed, so an interrupted loop resumes at the
first unfinished round and never redoes a finished one. After the last round, every strategy the
loop adopted, the first one and every single model are measured on the whole held-out pool.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consortium.coord.base import Coordinator
from consortium.coord.strategy import Plan, Strategy
from consortium.core.draws import uniform
from consortium.core.errors import ConfigError
from consortium.evolve.answer_folders import write_adopted
from consortium.evolve.guards import GuardConfig, compare
from consortium.evolve.library import StrategyLibrary
from consortium.evolve.measure import (
    Evaluator,
    accuracy,
    cluster_records,
    collaboration,
    measured,
    split_summary,
)
from consortium.evolve.proposal import Proposer, RoundContext, fair_share
from consortium.evolve.state import (
    EvolveState,
    FinalComparison,
    RoundSummary,
    StrategyResult,
)
from consortium.evolve.trial import RoundBatches, Trial, best_adoptable, try_proposal
from consortium.pool import Pool
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.dist import Executor, LocalExecutor
from consortium.runtime.store import TraceStore
from consortium.runtime.telemetry import Telemetry
from consortium.tasks.base import Grader, Task
from consortium.train.trinity.rollouts import minibatch


@dataclass(frozen=True)
class EvolveConfig:
    rounds: int = 5
    tuning_batch: int = 200
    heldout_batch: int = 400
    seed: int = 0
    concurrency: int = 32
    max_candidates: int = 8
    guard: GuardConfig = field(default_factory=GuardConfig)
    final_limit: int | None = None
    """Held-out tasks per dataset in the final comparison (None: the whole held-out pool)."""

    def fingerprint(self) -> dict[str, Any]:
        """What a resumed loop must share with the interrupted one (not rounds, not concurrency)."""
        data = asdict(self)
        data.pop("rounds")
        data.pop("concurrency")
        return data


@dataclass
class EvolveInputs:
    pool: Pool
    pool_name: str
    tuning_pool: list[Task]
    heldout_pool: list[Task]
    grader: Grader
    resolve: Callable[[str], Coordinator]
    models: list[str]
    store: TraceStore
    proposers: Sequence[Proposer]
    tasks_description: str = ""
    telemetry: Telemetry | None = None
    executor: Executor = field(default_factory=LocalExecutor)
    """Where strategies run."""
    final_pool: list[Task] | None = None
    """Tasks no decision saw, for the final comparison; None: the held-out pool (which holds
    the batches the guards decided on, so that comparison is not independent of them)."""
    note: Callable[[str], None] | None = None
    """Progress: a line after each strategy measured."""


def split_tasks(tasks: Sequence[Task], seed: int) -> tuple[list[Task], list[Task]]:
    """Two halves (tuning, held-out), each task placed by a hash of (seed, its id)."""
    halves: tuple[list[Task], list[Task]] = ([], [])
    for task in tasks:
        halves[uniform(seed, "heldout", task.id) < 0.5].append(task)
    return halves


class EvolveLoop:
    def __init__(
        self,
        inputs: EvolveInputs,
        config: EvolveConfig,
        out_dir: Path,
        *,
        start: Strategy | None = None,
        resume: bool = False,
        on_round: Callable[[RoundSummary], None] | None = None,
        after_round: Callable[[int], None] | None = None,
    ) -> None:
        if not inputs.tuning_pool or not inputs.heldout_pool:
            raise ConfigError("evolve needs tuning tasks and held-out tasks")
        pools = {"tuning": inputs.tuning_pool, "held-out": inputs.heldout_pool}
        if inputs.final_pool is not None:
            pools["final"] = inputs.final_pool
        names = list(pools)
        for index, first in enumerate(names):
            for second in names[index + 1 :]:
                overlap = {t.id for t in pools[first]} & {t.id for t in pools[second]}
                if overlap:
                    raise ConfigError(
                        f"{len(overlap)} tasks are both {first} and {second} tasks (e.g. "
                        f"{sorted(overlap)[0]}); each pool must be disjoint from the others"
                    )
        self.inputs = inputs
        self.config = config
        self.out_dir = out_dir
        self.on_round = on_round
        self.after_round = after_round
        self.library = StrategyLibrary(inputs.store)
        self.state_path = out_dir / "state.json"
        self.state = self._load_or_start(start, resume)

    def _load_or_start(self, start: Strategy | None, resume: bool) -> EvolveState:
        if self.state_path.exists():
            if not resume:
                raise ConfigError(
                    f"{self.out_dir} holds an evolve run; pass --resume to continue it, or "
                    "choose another --out"
                )
            state = EvolveState.load(self.state_path)
            if state.config != json.loads(json.dumps(self.config.fingerprint())):
                raise ConfigError(
                    f"--resume with different settings than {self.state_path} (only --rounds "
                    "and --concurrency may change)"
                )
            return state
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return EvolveState(
            evolve_id=time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6],
            config=json.loads(json.dumps(self.config.fingerprint())),
            pool=self.inputs.pool_name,
            tasks=self.inputs.tasks_description,
            start=start,
            incumbent=start,
            rounds=[],
            final=None,
        )

    @property
    def incumbent(self) -> Strategy:
        if self.state.incumbent is None:
            raise ValueError("no incumbent before the first round starts")
        return self.state.incumbent

    def batches(self, round_: int) -> tuple[list[Task], list[Task]]:
        seed = self.config.seed
        tuning = minibatch(self.inputs.tuning_pool, self.config.tuning_batch, seed, round_)
        heldout = minibatch(
            self.inputs.heldout_pool, self.config.heldout_batch, seed + 7919, round_
        )
        return tuning, heldout

    def _interrupted_runs(self) -> None:
        for run in self.inputs.store.list_runs():
            config = json.loads(run["config"] or "{}")
            if run["status"] == "running" and config.get("evolve_id") == self.state.evolve_id:
                self.inputs.store.finish_run(run["run_id"], "interrupted")

    def _evaluator(self, run_id: str) -> Evaluator:
        caps = self.config.guard.max_calls_per_task
        return Evaluator(
            Caller(self.inputs.pool, self.inputs.store, run_id, telemetry=self.inputs.telemetry),
            self.inputs.grader,
            self.inputs.resolve,
            concurrency=self.config.concurrency,
            task_limits=Limits(max_calls=int(caps)) if caps is not None else None,
            executor=self.inputs.executor,
            seed=self.config.seed,
            note=self.inputs.note,
        )

    async def run(self) -> EvolveState:
        self._interrupted_runs()
        while len(self.state.rounds) < self.config.rounds:
            await self._round(len(self.state.rounds) + 1)
        if self.state.final is None or self.state.final.rounds != len(self.state.rounds):
            await self._final()
        return self.state

    async def _round(self, round_: int) -> None:
        store = self.inputs.store
        run_id = store.start_run(
            "evolve",
            pool=self.inputs.pool_name,
            config={"evolve_id": self.state.evolve_id, "round": round_},
        )
        evaluator = self._evaluator(run_id)
        tuning, heldout = self.batches(round_)
        if self.state.incumbent is None:
            self.state.incumbent = self.state.start = await self._best_single(evaluator, tuning)
        incumbent = self.incumbent
        batches = RoundBatches(
            round_,
            incumbent.id,
            tuning,
            heldout,
            await evaluator.strategy(incumbent, tuning, "tuning"),
            await evaluator.strategy(incumbent, heldout, "heldout"),
        )
        context = self._context(batches, evaluator)
        proposed = [await proposer.propose(context) for proposer in self.inputs.proposers]
        chosen = fair_share(proposed, incumbent.id, self.config.max_candidates)
        trials = [
            await try_proposal(proposal, batches, evaluator, self.config.guard)
            for proposal in chosen
        ]
        adopted = best_adoptable(trials)
        calls = [c for c in store.iter_calls(run_id) if c["policy"] == f"{incumbent.id}@heldout"]
        candidates = [trial.candidate for trial in trials]
        summary = RoundSummary(
            round=round_,
            run_id=run_id,
            incumbent_id=incumbent.id,
            incumbent=incumbent.describe(),
            tuning=split_summary(batches.incumbent_tuning),
            heldout=split_summary(batches.incumbent_heldout),
            collaboration=collaboration(batches.incumbent_heldout, calls),
            candidates=candidates,
            adopted=adopted.candidate.strategy_id if adopted else None,
            served=self._serve_adopted(trials, adopted, round_),
            overfit_candidates=sum(c.evidence.overfit for c in candidates),
        )
        rows = cluster_records(incumbent.id, "tuning", batches.incumbent_tuning)
        rows += cluster_records(incumbent.id, "heldout", batches.incumbent_heldout)
        rows += [row for trial in trials for row in trial.rows]
        tried = [incumbent, *(trial.candidate.strategy for trial in trials)]
        changes = [trial.change for trial in trials]
        self.library.record_round(self.state.evolve_id, round_, tried, rows, changes)
        if adopted is not None:
            self.state.incumbent = adopted.candidate.strategy
        self._finish_round(summary)

    def _context(self, batches: RoundBatches, evaluator: Evaluator) -> RoundContext:
        """What a proposer reads: the incumbent, the tuning batch, the models and the guards."""
        guard = self.config.guard
        return RoundContext(
            batches.round,
            self.incumbent,
            batches.tuning,
            self.inputs.models,
            evaluator,
            self.out_dir,
            self.config.seed,
            self.inputs.tuning_pool,
            guard.cost,
            guard.max_calls_per_task,
            guard.max_cost_per_task,
        )

    def _serve_adopted(
        self, trials: Sequence[Trial], adopted: Trial | None, round_: int
    ) -> dict[str, str]:
        """Mark the one adopted candidate (every other is rejected) and write its folders as
        OUT/adopted/round-N/CLUSTER: the path per cluster."""
        served: dict[str, str] = {}
        for trial in trials:
            candidate = trial.candidate
            candidate.adopted = (
                adopted is not None and candidate.strategy_id == adopted.candidate.strategy_id
            )
            for folder in trial.folders if candidate.adopted else ():
                path = write_adopted(
                    folder, self.out_dir, round_, candidate.reason, self.state.evolve_id
                )
                served[folder.cluster] = str(path)
        return served

    def _finish_round(self, summary: RoundSummary) -> None:
        """The round's summary saved (the resume point), its run finished, the callbacks told."""
        self.state.rounds.append(summary)
        self.state.save(self.state_path)
        self.inputs.store.finish_run(summary.run_id, "finished", {"adopted": summary.adopted})
        if self.on_round is not None:
            self.on_round(summary)
        if self.after_round is not None:
            self.after_round(summary.round)

    async def _best_single(self, evaluator: Evaluator, tuning: list[Task]) -> Strategy:
        """The starting strategy when none is given: the model most accurate on the first tuning
        batch, answering everything."""
        scores = {}
        for model in self.inputs.models:
            results = await evaluator.policy(f"single:{model}", tuning, "tuning")
            scores[model] = (accuracy(results), -sum(r.cost for r in results))
        best = max(scores, key=lambda m: scores[m])
        return Strategy(default=Plan(first=f"single:{best}"))

    async def _final(self) -> None:
        """The start, each adopted strategy and every single model on the final pool (default:
        the whole held-out pool)."""
        store = self.inputs.store
        run_id = store.start_run(
            "evolve",
            pool=self.inputs.pool_name,
            config={"evolve_id": self.state.evolve_id, "round": "final"},
        )
        evaluator = self._evaluator(run_id)
        independent = self.inputs.final_pool is not None
        tasks = (
            self.inputs.final_pool
            if self.inputs.final_pool is not None
            else self.inputs.heldout_pool
        )
        if self.config.final_limit is not None:
            size = self.config.final_limit * len({t.dataset for t in tasks})
            tasks = minibatch(tasks, size, self.config.seed + 104729, 0)
        if self.state.start is None:
            raise ValueError("no start strategy before the first round")
        lineage = [self.state.start]
        lineage += [c.strategy for r in self.state.rounds for c in r.candidates if c.adopted]
        results = {s.id: await evaluator.strategy(s, tasks, "final") for s in lineage}
        singles = {
            m: await evaluator.policy(f"single:{m}", tasks, "final") for m in self.inputs.models
        }
        first, last = lineage[0], lineage[-1]
        evidence = compare(
            measured(results[first.id], self.config.guard.cost),
            measured(results[last.id], self.config.guard.cost),
            self.config.guard,
        )
        self.state.final = FinalComparison(
            rounds=len(self.state.rounds),
            run_id=run_id,
            tasks=len(tasks),
            independent=independent,
            strategies=[
                StrategyResult(
                    strategy_id=s.id,
                    describe=s.describe(),
                    **split_summary(results[s.id]).model_dump(),
                )
                for s in lineage
            ],
            singles={m: split_summary(r) for m, r in singles.items()},
            first_vs_final=evidence,
        )
        self.state.save(self.state_path)
        store.finish_run(run_id, "finished")
