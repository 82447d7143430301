"""The self-improvement loop on the replay pool (RouterBench's priced models): guards, caps,
learned escalation, resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest

from consortium.coord.base import Coordinator, Outcome
from consortium.coord.registry import build_coordinator
from consortium.coord.strategy import Plan, Strategy, StrategyCoordinator
from consortium.core.answers import agree, final_answer
from consortium.core.types import user
from consortium.evaluation.runner import run_policy
from consortium.evolve.guards import Decision, GuardConfig, Measured, judge
from consortium.evolve.library import StrategyLibrary
from consortium.evolve.loop import EvolveConfig, EvolveInputs, EvolveLoop, split_tasks
from consortium.evolve.measure import Evaluator, accuracy, by_cluster
from consortium.evolve.proposals import (
    ClusterSpecialists,
    Escalation,
    Proposal,
    Proposer,
    Prune,
    RoundContext,
    Templates,
)
from consortium.evolve.report import write_report
from consortium.evolve.report_plots import pareto_front
from consortium.evolve.state import EvolveState
from consortium.pool import Pool
from consortium.pool.config import PoolConfig, dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller, TaskCaller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from tests.test_cli import cli, one_line_error

MODELS = [
    "gpt-4-1106-preview",
    "mistralai/mixtral-8x7b-chat",
    "zero-one-ai/Yi-34B-Chat",
    "mistralai/mistral-7b-chat",
]


@pytest.fixture(scope="module")
def pool_config(replay_data: ReplayData, replay_server: ReplayServerProcess) -> PoolConfig:
    return replay_pool(replay_data, replay_server.base_url, MODELS)


def routerbench(data: ReplayData, split: str, limit: int) -> list[Task]:
    return load_replay_tasks(data, source="routerbench", split=split, limit=limit).tasks


class Memorizer:
    """The planted cheat: on the tasks of this round's tuning batch it routes to a model the
    recorded data say is right; everywhere else to the weakest model."""

    name = "memorizer"

    async def propose(self, context: RoundContext) -> list[Proposal]:
        return [Proposal(Strategy(default=Plan(first="memo:")), self.name, "remembers answers")]


class MemoCoordinator:
    def __init__(self, remembered: set[str], fallback: str) -> None:
        self.remembered = remembered
        self.fallback = fallback
        self.name = "memo"

    async def run(self, task: Task, caller: TaskCaller) -> Outcome:
        right = [m for m, p in task.meta["p_correct"].items() if p >= 1.0 and m in MODELS]
        model = right[0] if task.id in self.remembered and right else self.fallback
        short = model.rsplit("/", 1)[-1]
        completion = await caller.call(short, [user(task.question)])
        return Outcome(completion.text, model=short)


class Fixed:
    """Proposes the given strategies every round."""

    def __init__(self, *strategies: Strategy, name: str = "fixed") -> None:
        self.strategies = strategies
        self.name = name

    async def propose(self, context: RoundContext) -> list[Proposal]:
        return [Proposal(s, self.name, "planted") for s in self.strategies]


class CrashOnRound:
    name = "crash"

    def __init__(self, round_: int) -> None:
        self.round = round_

    async def propose(self, context: RoundContext) -> list[Proposal]:
        if context.round == self.round:
            raise KeyboardInterrupt  # what a Ctrl-C mid-round looks like to the loop
        return []


def round_context(
    pool: Pool,
    store: TraceStore,
    incumbent: Strategy,
    tasks: list[Task],
    out: Path,
    resolve: Callable[[str], Coordinator] | None = None,
) -> RoundContext:
    """Round 1 of a loop over `tasks`, measured through `pool` and traced in `store`."""
    resolve = resolve or (lambda spec: build_coordinator(spec, pool.config))
    evaluator = Evaluator(Caller(pool, store, store.start_run("test")), ReplayGrader(), resolve)
    return RoundContext(1, incumbent, tasks, pool.names, evaluator, out, tuning_pool=tasks)


async def run_loop(
    config: PoolConfig,
    tuning: list[Task],
    heldout: list[Task],
    store: TraceStore,
    out: Path,
    proposers: Sequence[Proposer],
    settings: EvolveConfig,
    *,
    start: Strategy | None = None,
    resume: bool = False,
    resolve: Callable[[str], Coordinator] | None = None,
) -> EvolveState:
    async with Pool(config) as pool:
        inputs = EvolveInputs(
            pool=pool,
            pool_name="replay (test)",
            tuning_pool=tuning,
            heldout_pool=heldout,
            grader=ReplayGrader(),
            resolve=resolve or (lambda spec: build_coordinator(spec, config)),
            models=config.names,
            store=store,
            proposers=proposers,
        )
        return await EvolveLoop(inputs, settings, out, start=start, resume=resume).run()


def test_agreement_reads_the_final_answer() -> None:
    assert agree("A)", "A\n")
    assert agree("Thinking… The answer is (B).", "b")
    assert not agree("The answer is 12", "The answer is 13")
    assert final_answer("(replay of x) The answer is R0123456789.") == "R0123456789"


def test_guards_adopt_on_held_out_evidence_only() -> None:
    rng = np.random.default_rng(0)
    incumbent = rng.random(300) < 0.6
    better = incumbent.copy()
    better[np.flatnonzero(~incumbent)[:30]] = True  # 30 wins, no losses
    cost = np.full(300, 1e-3)
    calls = np.ones(300)
    base = Measured.of(incumbent, cost, calls)
    decision = judge(base, Measured.of(better, cost, calls), GuardConfig())
    assert decision.adopted and decision.evidence.wins == 30 and decision.evidence.losses == 0
    assert decision.evidence.p_value == pytest.approx(binomtest(30, 30, 0.5, "greater").pvalue)
    # The same gain at more than the cost cap is refused, whatever the accuracy.
    capped = judge(base, Measured.of(better, cost * 3, calls), GuardConfig(max_cost_per_task=2e-3))
    assert not capped.adopted and capped.reason.startswith("cost cap")
    # Half the cost, same answers: adopted as cheaper; half the cost and 10 points worse: not.
    assert judge(base, Measured.of(incumbent, cost / 2, calls), GuardConfig()).adopted
    worse = incumbent.copy()
    worse[np.flatnonzero(incumbent)[:30]] = False
    refused = judge(base, Measured.of(worse, cost / 2, calls), GuardConfig())
    assert not refused.adopted and "not shown better" in refused.reason
    # Better where tuned, worse held-out: named as such.
    overfit = judge(base, Measured.of(worse, cost, calls), GuardConfig(), tuning_difference=0.2)
    assert not overfit.adopted and overfit.evidence.overfit


def test_pareto_front() -> None:
    points = [("a", 1.0, 50.0), ("b", 2.0, 60.0), ("c", 2.0, 55.0), ("d", 3.0, 60.0)]
    assert [p[0] for p in pareto_front(points)] == ["a", "b"]


def test_split_tasks_is_a_partition(replay_data: ReplayData) -> None:
    tasks = routerbench(replay_data, "train", 50)
    tuning, heldout = split_tasks(tasks, 3)
    assert {t.id for t in tuning} | {t.id for t in heldout} == {t.id for t in tasks}
    assert not {t.id for t in tuning} & {t.id for t in heldout}
    assert 0.3 < len(tuning) / len(tasks) < 0.7


async def test_escalation_on_disagreement_follows_the_recorded_answers(
    pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    plan = Plan(
        first="single:mistral-7b-chat",
        check="single:mixtral-8x7b-chat",
        escalate="single:gpt-4-1106-preview",
        trigger="disagreement",
    )
    tasks = routerbench(replay_data, "test", 20)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    async with Pool(pool_config) as pool:
        caller = Caller(pool, store, store.start_run("test"))
        coordinator = StrategyCoordinator(
            Strategy(default=plan), lambda spec: build_coordinator(spec, pool_config)
        )
        results = await run_policy(coordinator, tasks, ReplayGrader(), caller)
    records = {r.id: r for r in replay_data.select(source="routerbench")}
    for result in results:
        responses = records[result.task.id].responses or {}
        disagree = not agree(
            responses["mistralai/mistral-7b-chat"], responses["mistralai/mixtral-8x7b-chat"]
        )
        assert result.outcome is not None and result.outcome.escalated == disagree
        assert result.calls == (3 if disagree else 2)
        chosen = "gpt-4-1106-preview" if disagree else "mistralai/mistral-7b-chat"
        assert result.answer == responses[chosen]
    escalated = [r.outcome is not None and r.outcome.escalated for r in results]
    assert any(escalated) and not all(escalated)


async def test_a_change_that_only_helps_the_tuning_set_is_rejected(
    pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    tuning, heldout = routerbench(replay_data, "train", 40), routerbench(replay_data, "test", 40)
    remembered: set[str] = set()

    def resolve(spec: str) -> Coordinator:
        if spec == "memo:":
            return MemoCoordinator(remembered, "mistralai/mistral-7b-chat")
        return build_coordinator(spec, pool_config)

    remembered.update(t.id for t in tuning)  # it has seen every tuning task
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    state = await run_loop(
        pool_config,
        tuning,
        heldout,
        store,
        tmp_path / "out",
        [Memorizer()],
        EvolveConfig(rounds=2, tuning_batch=60, heldout_batch=90),
        start=Strategy(default=Plan(first="single:Yi-34B-Chat")),
        resolve=resolve,
    )
    for summary in state.rounds:
        (candidate,) = summary.candidates
        evidence = candidate.evidence
        assert candidate.tuning_accuracy > summary.tuning.accuracy  # it looks great
        assert evidence.difference < 0 and evidence.overfit
        assert not candidate.adopted and "helps only where tuned" in candidate.reason
    assert state.incumbent == state.start
    library = StrategyLibrary(store)
    changes = library.changes(state.evolve_id)
    assert len(changes) == 2 and not any(c["adopted"] for c in changes)
    assert library.strategy(changes[0]["candidate_id"]) == Strategy(default=Plan(first="memo:"))
    report = write_report(state, tmp_path / "out").read_text()
    assert "helps only where tuned" in report and "No change passed the guards." in report


async def test_caps_hold(pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path) -> None:
    tuning, heldout = routerbench(replay_data, "train", 30), routerbench(replay_data, "test", 30)
    voters = "gpt-4-1106-preview,mixtral-8x7b-chat,Yi-34B-Chat,mistral-7b-chat"
    start = Strategy(default=Plan(first="single:mistral-7b-chat"))
    many_calls = Strategy(default=Plan(first=f"workflow:judge-vote:models={voters}"))  # 5 calls
    expensive = Strategy(
        default=Plan(
            first="single:mistral-7b-chat", escalate="single:gpt-4-1106-preview", trigger="always"
        )
    )
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    guard = GuardConfig(max_calls_per_task=3, max_cost_per_task=1e-3)
    state = await run_loop(
        pool_config,
        tuning,
        heldout,
        store,
        tmp_path / "out",
        [Fixed(many_calls, expensive)],
        EvolveConfig(rounds=1, tuning_batch=60, heldout_batch=60, guard=guard),
        start=start,
    )
    reasons = {c.strategy_id: c.reason for c in state.rounds[0].candidates}
    assert reasons[expensive.id].startswith("cost cap")
    # The vote needs 5 calls; the hard cap stops every task at 3, and the guard refuses it.
    assert not any(c.adopted for c in state.rounds[0].candidates)
    assert "call" in reasons[many_calls.id] or "not shown better" in reasons[many_calls.id]
    run_ids = [r["run_id"] for r in store.list_runs() if r["kind"] == "evolve"]
    rows = [row for run_id in run_ids for row in store.iter_results(run_id)]
    assert rows and max(row["calls"] for row in rows) <= 3
    vote_rows = [row for row in rows if row["policy"].startswith(many_calls.id)]
    assert vote_rows and all(row["error"] and "calls" in row["error"] for row in vote_rows)


async def test_escalation_learns_a_confidence_threshold(
    pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    """A first policy whose confidence is high exactly when its answer is right: the proposer
    should escalate below a threshold between the two levels, which is cheaper than always."""

    class Confident:
        name = "confident"

        async def run(self, task: Task, caller: TaskCaller) -> Outcome:
            completion = await caller.call("mistral-7b-chat", [user(task.question)])
            right = task.meta["p_correct"]["mistralai/mistral-7b-chat"] >= 1.0
            return Outcome(completion.text, confidence=0.9 if right else 0.2)

    def resolve(spec: str) -> Coordinator:
        return Confident() if spec == "confident:" else build_coordinator(spec, pool_config)

    tasks = routerbench(replay_data, "train", 30)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    async with Pool(pool_config) as pool:
        incumbent = Strategy(default=Plan(first="confident:"))
        context = round_context(pool, store, incumbent, tasks, tmp_path, resolve)
        proposals = await Escalation(tolerance=0.0).propose(context)
    proposal = next(p for p in proposals if "most accurate" in p.rationale)
    plans = proposal.strategy.clusters
    assert len(plans) == 3, proposal
    for cluster, plan in plans.items():
        assert plan.first == "confident:", (cluster, plan)
        assert plan.trigger == "confidence" and 0.2 < plan.threshold < 0.9


async def test_cluster_specialists_pick_per_dataset(
    pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    tasks = routerbench(replay_data, "train", 30)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    async with Pool(pool_config) as pool:
        incumbent = Strategy(default=Plan(first="single:mistral-7b-chat"))
        context = round_context(pool, store, incumbent, tasks, tmp_path)
        accurate, cheap = await ClusterSpecialists(tolerance=0.05).propose(context)
        singles = await context.singles()
    for cluster, plan in accurate.strategy.clusters.items():
        scores = {m: accuracy(by_cluster(r)[cluster]) for m, r in singles.items()}
        assert scores[plan.first.removeprefix("single:")] == max(scores.values())
        cheap_plan = cheap.strategy.plan_for(cluster)
        assert scores[cheap_plan.first.removeprefix("single:")] >= max(scores.values()) - 0.05


async def test_resume_does_not_redo_finished_rounds(
    pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    tuning, heldout = routerbench(replay_data, "train", 40), routerbench(replay_data, "test", 40)
    settings = EvolveConfig(rounds=3, tuning_batch=45, heldout_batch=60)
    proposers: list[Proposer] = [ClusterSpecialists(), Escalation()]
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        await run_loop(
            pool_config, tuning, heldout, store, out, [*proposers, CrashOnRound(2)], settings
        )
    interrupted = json.loads((out / "state.json").read_text())
    assert len(interrupted["rounds"]) == 1
    with pytest.raises(Exception, match="--resume"):
        await run_loop(pool_config, tuning, heldout, store, out, proposers, settings)
    resumed = await run_loop(
        pool_config, tuning, heldout, store, out, proposers, settings, resume=True
    )
    assert resumed.rounds[0].model_dump() == interrupted["rounds"][0]  # round 1 kept, not redone
    runs = [r for r in store.list_runs() if r["kind"] == "evolve"]
    by_round: dict[Any, list[str]] = {}
    for run in runs:
        by_round.setdefault(json.loads(run["config"])["round"], []).append(run["status"])
    assert by_round[1] == ["finished"]
    assert sorted(by_round[2]) == ["finished", "interrupted"]
    straight = await run_loop(
        pool_config,
        tuning,
        heldout,
        TraceStore(f"sqlite:///{tmp_path / 'u.db'}"),
        tmp_path / "straight",
        proposers,
        settings,
    )

    def outcome(state: EvolveState) -> list[Any]:
        assert state.final is not None
        untimed = {"seconds_per_task": 0.0}  # wall time: the one figure a rerun never repeats
        return [
            (
                r.incumbent_id,
                r.heldout.model_copy(update=untimed),
                r.tuning.model_copy(update=untimed),
                [c.strategy_id for c in r.candidates],
                r.adopted,
            )
            for r in state.rounds
        ] + [
            [s.model_copy(update=untimed) for s in state.final.strategies],
            state.final.first_vs_final,
        ]

    assert outcome(resumed) == outcome(straight)
    # The library holds each round once, even though round 2 was started twice.
    rounds = [row["round"] for row in StrategyLibrary(store).changes(resumed.evolve_id)]
    assert rounds == sorted(rounds) and len(rounds) == sum(
        len(r.candidates) for r in resumed.rounds
    )


@pytest.mark.slow
def test_evolve_command_killed_and_resumed(
    pool_config: PoolConfig, replay_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL once a round is finished; --resume ends where an uninterrupted run ends."""
    pool = tmp_path / "pool.toml"
    pool.write_text(dump_pool(pool_config))
    data = f"replay:data={replay_dir}:source=routerbench"

    def args(out: Path, traces: str) -> list[str]:
        return [
            "evolve", "--pool", str(pool), "--out", str(out), "--rounds", "2",
            "--tasks", f"{data}:split=train:limit=20", "--heldout", f"{data}:split=test:limit=20",
            "--batch", "15", "--heldout-batch", "21", "--traces", f"sqlite:///{tmp_path / traces}",
            "--proposers", "cluster-specialists,escalation",
        ]  # fmt: skip

    out = tmp_path / "killed"
    command = [sys.executable, "-m", "consortium", *args(out, "k.db")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "state.json").exists():
        time.sleep(0.1)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed = json.loads((out / "state.json").read_text())
    assert len(killed["rounds"]) == 1, "killed after the first round, before the end"
    one_line_error(cli(*args(out, "k.db")), "--resume")  # the folder holds a run: no overwrite
    one_line_error(cli(*args(out, "k.db"), "--resume", "--seed", "1"), "different settings")
    one_line_error(cli(*args(out, "k.db"), "--proposers", "nope"), "--proposers")
    resumed = cli(*args(out, "k.db"), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    straight = cli(*args(tmp_path / "straight", "s.db"))
    assert straight.returncode == 0, straight.stderr

    def outcome(folder: Path) -> str:
        text = (folder / "state.json").read_text()
        state = json.loads(re.sub(r'"seconds_per_task": [0-9.e+-]+', '"seconds_per_task": 0', text))
        rounds = [{k: v for k, v in r.items() if k != "run_id"} for r in state["rounds"]]
        final = {k: v for k, v in state["final"].items() if k != "run_id"}
        return json.dumps([rounds, final], sort_keys=True)

    assert outcome(out) == outcome(tmp_path / "straight")
    again = json.loads((out / "state.json").read_text())
    assert again["rounds"][: len(killed["rounds"])] == killed["rounds"]  # finished rounds kept
    report = (out / "report.md").read_text()
    assert "replay of recorded outcomes" in report  # the report names its pool
    for heading in ("## Rounds", "## Final comparison", "Cost per extra point", "## Collaboration"):
        assert heading in report or "No extra accuracy" in report, heading
    for image in ("rounds.png", "pareto.png"):
        assert (out / image).read_bytes()[:4] == b"\x89PNG"


async def test_retrain_trinity_warm_starts_from_the_incumbent_policy(
    replay_data: ReplayData, replay_server: ReplayServerProcess, tmp_path: Path
) -> None:
    from consortium.coord.trinity.policy import HeadSetup, save_policy
    from consortium.evolve.measure import Evaluator
    from consortium.evolve.proposals import RetrainTrinity
    from consortium.train.trinity.online import train_online
    from consortium.train.trinity.settings import TrainConfig
    from tests.test_trinity import hash_setup

    tasks, setup = hash_setup(replay_data)
    start = np.random.default_rng(0).normal(size=setup.n_params)
    incumbent_dir = tmp_path / "trinity"
    save_policy(incumbent_dir, start, setup, {})

    def load(path: Path) -> tuple[HeadSetup, np.ndarray]:
        return setup, np.load(path / "head.npy").reshape(-1)

    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"])
    train = TrainConfig(generations=2, popsize=4, minibatch=10, sigma0=0.1)
    async with Pool(config) as pool:
        caller = Caller(pool, None, "test")
        unmoved = await train_online(
            setup, tasks, ReplayGrader(), caller, replace(train, generations=0), init=start
        )
        assert np.array_equal(unmoved.vector, start)  # the warm start is the starting mean
        evaluator = Evaluator(caller, ReplayGrader(), lambda spec: build_coordinator(spec, config))
        context = RoundContext(
            2,
            Strategy(default=Plan(first=str(incumbent_dir))),
            tasks,
            config.names,
            evaluator,
            tmp_path / "out",
            tuning_pool=tasks,
        )
        (proposal,) = await RetrainTrinity(train, load).propose(context)
    retrained = Path(proposal.strategy.default.first)
    assert retrained == tmp_path / "out" / "round-2" / "trinity-trinity"
    meta = json.loads((retrained / "policy.json").read_text())
    assert meta["warm_start"] == str(incumbent_dir) and meta["round"] == 2
    moved = np.load(retrained / "head.npy").reshape(-1)
    assert not np.allclose(moved, start)
    # sigma0 0.1 for 2 generations stays near the warm start, far from a cold (zero) start.
    assert np.linalg.norm(moved - start) < np.linalg.norm(start)


async def test_templates_per_cluster_and_their_pruning(
    pool_config: PoolConfig, replay_data: ReplayData, tmp_path: Path
) -> None:
    tasks = routerbench(replay_data, "train", 20)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    async with Pool(pool_config) as pool:
        incumbent = Strategy(default=Plan(first="single:mistral-7b-chat"))
        context = round_context(pool, store, incumbent, tasks, tmp_path)
        (vote,) = await Templates(kinds=["judge-vote"]).propose(context)
        singles = await context.singles()
        for cluster, plan in vote.strategy.clusters.items():
            scores = {m: accuracy(by_cluster(r)[cluster]) for m, r in singles.items()}
            lead = plan.first.removeprefix("workflow:judge-vote:models=").split(",")[0]
            assert scores[lead] == max(scores.values()) and plan.first.count(",") == 2
            build_coordinator(plan.first, pool_config)  # a spec the registry builds
        context.incumbent = vote.strategy
        pruned = await Prune().propose(context)
    assert len(pruned) == 3  # one per cluster: back to the lead alone
    for proposal in pruned:
        changed = [
            c for c, p in proposal.strategy.clusters.items() if not p.first.startswith("workflow:")
        ]
        assert len(changed) == 1


def test_a_cheaper_change_needs_enough_held_out_tasks_to_be_shown_no_worse() -> None:
    """Where the two agree on every held-out task, a bootstrap interval is [0, 0] at any size; the
    exact bound on the losses refuses 32 such tasks (it cannot exclude losing 10 points) and
    admits 200 (at most 1.8 points lost)."""

    def decided(tasks: int) -> Decision:
        correct, calls = np.ones(tasks), np.ones(tasks)
        dear = Measured.of(correct, np.full(tasks, 1e-3), calls)
        return judge(dear, Measured.of(correct, np.full(tasks, 5e-4), calls), GuardConfig())

    few, many = decided(32), decided(200)
    assert few.evidence.ci_low == 0.0 and not few.adopted
    assert few.evidence.noninferiority_low == pytest.approx(-(1 - 0.025 ** (1 / 32)))
    assert many.adopted and "exact 95% bound -1.8 points" in many.reason
