"""Evolve over answer-aware policies: on a records task set served by the HTTP replay of the same
records (40 DATE questions, 3 models), the answer-aware proposer reads the answers' agreement on
the tuning tasks live, the guard decides on held-out evidence, and an adopted policy is a policy
folder that `serve` takes; a rejected one leaves the strategy as it was."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from consortium.coord.answers.folder import load_answer_policy, read_policy, write_policy
from consortium.coord.registry import build_coordinator
from consortium.coord.strategy import Plan, Strategy
from consortium.evaluation.results import TaskResult
from consortium.evolve.answer_aware import AnswerAware
from consortium.evolve.answer_samples import live_samples
from consortium.evolve.answer_space import Member, most_samples, tau_moves
from consortium.evolve.loop import EvolveConfig
from consortium.evolve.measure import Evaluator
from consortium.evolve.proposal import Proposal, RoundContext
from consortium.evolve.session import EvolveRequest, run_evolve
from consortium.evolve.state import EvolveState
from consortium.pool import Pool
from consortium.pool.config import load_pool
from consortium.records import load_records
from consortium.records.task_kind import answer_kind_of
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.tasks import ReplayGrader
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from consortium.tasks.math import MathGrader
from consortium.tasks.registry import load_task_set
from consortium.train.answers.policy import fit_answer_policy
from tests.helpers import SharedRecords
from tests.test_cli import cli
from tests.test_serve import serving

pytestmark = pytest.mark.slow  # servers and records imports: tens of seconds

QUESTIONS = 40
"""DATE: gpt-4 (3 samples recorded), gpt-3.5-turbo and Llama-2-13B (20 each)."""


@pytest.fixture(scope="module")
def date_records(shared_records: SharedRecords) -> Path:
    return shared_records("date", QUESTIONS)  # the session's import


@pytest.fixture(scope="module")
def replay_pool_file(
    date_records: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    pool_file = tmp_path_factory.mktemp("pool") / "replay.toml"
    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[date_records]):
        yield pool_file


def _request(pool: Path, records: Path, out: Path, start: str) -> EvolveRequest:
    return EvolveRequest(
        pool=pool,
        tasks=f"records:path={records}",
        out=out,
        start=start,
        proposers=("answer-aware",),
        loop=EvolveConfig(rounds=1, tuning_batch=20, heldout_batch=20),
        traces=f"sqlite:///{out.parent / 'traces.db'}",
    )


def _correct(store: TraceStore, run_id: str, policy: str) -> dict[str, bool]:
    return {r["task_id"]: r["correct"] for r in store.iter_results(run_id) if r["policy"] == policy}


def test_an_adopted_answer_aware_policy_is_a_folder_that_serves(
    replay_pool_file: Path, date_records: Path, tmp_path: Path
) -> None:
    out = tmp_path / "evolve"
    traces = tmp_path / "traces.db"
    done = cli(
        "evolve", "--pool", str(replay_pool_file), "--tasks", f"records:path={date_records}",
        "--out", str(out), "--rounds", "1", "--batch", "20", "--heldout-batch", "20",
        "--start", "single:Llama-2-13B", "--proposers", "answer-aware", "--answer-samples", "3",
        "--traces", f"sqlite:///{traces}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    state = EvolveState.load(out / "state.json")
    (summary,) = state.rounds
    assert summary.candidates and {c.proposer for c in summary.candidates} == {"answer-aware"}
    store = TraceStore(f"sqlite:///{traces}")
    # The proposer read the answers' agreement live: later samples asked through the pool.
    sampled = {c["policy"] for c in store.iter_calls(summary.run_id)}
    assert {"sample:gpt-4#1@tuning", "sample:gpt-3.5-turbo#2@tuning"} <= sampled
    incumbent = _correct(store, summary.run_id, f"{summary.incumbent_id}@heldout")
    for candidate in summary.candidates:
        folder = Path(candidate.strategy.plan_for("date").first)
        assert folder.parent == out / "answers"
        policy = read_policy(folder)
        assert policy.answer_kind == "date"  # from the records, not guessed
        # The guard's evidence is the held-out batch, task by task, as the traces hold it.
        mine = _correct(store, summary.run_id, f"{candidate.strategy_id}@heldout")
        assert mine.keys() == incumbent.keys() and len(mine) == candidate.evidence.tasks
        wins = sum(mine[t] and not incumbent[t] for t in mine)
        losses = sum(incumbent[t] and not mine[t] for t in mine)
        assert (wins, losses) == (candidate.evidence.wins, candidate.evidence.losses)
        # The folder states what the guard measured on held-out.
        assert policy.test.questions == candidate.evidence.tasks
        assert policy.test.accuracy == pytest.approx(100 * candidate.evidence.candidate_accuracy)
    adopted = next(c for c in summary.candidates if c.adopted)
    assert summary.adopted == adopted.strategy_id == state.incumbent.id  # type: ignore[union-attr]
    assert adopted.evidence.p_value < 0.05 and adopted.evidence.difference > 0
    served = Path(summary.served["date"])
    assert served == out / "adopted" / "round-1" / "date"
    chosen = read_policy(Path(adopted.strategy.plan_for("date").first))
    assert read_policy(served).params == chosen.params
    assert "adopted by the guard" in read_policy(served).selection
    team = load_answer_policy(served)
    assert team.rule.kind == chosen.kind
    report = (out / "report.md").read_text()
    assert f"--policy {served}" in report
    loaded = load_records(date_records)
    question = loaded.table.column("question")[0].as_py()
    recorded = {
        (row["model"], row["sample"]): row["response"]
        for row in loaded.table.to_pylist()
        if row["question"] == question
    }
    body = {"model": "consortium", "messages": [{"role": "user", "content": question}]}
    with serving(replay_pool_file, tmp_path / "serve.db", "--policy", str(served)) as url:
        reply = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    answered = reply.headers["x-consortium-answered-by"]
    assert answered in team.rule.asks()
    text = reply.json()["choices"][0]["message"]["content"]
    assert text in {r for (model, _), r in recorded.items() if model == answered}


def test_a_rejected_answer_aware_proposal_leaves_the_strategy_unchanged(
    replay_pool_file: Path, date_records: Path, tmp_path: Path
) -> None:
    """From gpt-4 alone, the proposer finds cascades as accurate on tuning for a fraction of the
    cost; on held-out they lose answers gpt-4 got right, so the guard keeps gpt-4."""
    out = tmp_path / "evolve"
    state, report = run_evolve(_request(replay_pool_file, date_records, out, "single:gpt-4"))
    (summary,) = state.rounds
    assert summary.candidates and not any(c.adopted for c in summary.candidates)
    for candidate in summary.candidates:
        assert candidate.evidence.losses > candidate.evidence.wins, candidate.reason
        assert read_policy(Path(candidate.strategy.plan_for("date").first)).test.questions > 0
    assert state.incumbent == state.start == Strategy(default=Plan(first="single:gpt-4"))
    assert summary.adopted is None and summary.served == {}
    assert not (out / "adopted").exists()
    text = report.read_text()
    assert "No change passed the guards." in text and "policy folders" not in text
    saved = json.loads((out / "state.json").read_text())
    assert saved["incumbent"] == saved["start"] == state.incumbent.model_dump()


def test_tau_moves_from_the_current_cascade_and_answer_kinds(
    replay_pool_file: Path, date_records: Path, tmp_path: Path
) -> None:
    """The incumbent is a MoT cascade trained on the records, its τ set to 0.6: the τ moves are
    the same cascade (models, weights, samples) at 0.5 and 0.7, played on the live tuning samples
    (as many as the cascade asks); 0.7, more accurate on tuning, is proposed. Answer kinds: a
    records task's from its records, another's from its grader; none for a replay's recorded
    verdicts."""
    fitted = tmp_path / "cascade"
    trained = fit_answer_policy("mot-cascade", date_records).policy
    write_policy(
        fitted, trained.model_copy(update={"params": {**trained.params, "threshold": 0.6}})
    )
    current = read_policy(fitted)
    task_set = load_task_set(f"records:path={date_records}:split=test:limit=20")
    config = load_pool(replay_pool_file)
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    incumbent = Strategy(default=Plan(first=str(fitted)))

    async def propose() -> tuple[list[Member], list[Proposal], list[TaskResult]]:
        async with Pool(config) as pool:
            evaluator = Evaluator(
                Caller(pool, store, store.start_run("test")),
                task_set.grader,
                lambda spec: build_coordinator(spec, config),
            )
            context = RoundContext(
                1, incumbent, task_set.tasks, config.names, evaluator, tmp_path / "out"
            )
            samples = await live_samples(context, "date", "date", most_samples(current.params))
            names = {m: m for m in current.models}
            moves = tau_moves(samples.table(), str(fitted), names)
            proposals = await AnswerAware(samples=2, limit=20).propose(context)
            now = await evaluator.strategy(incumbent, task_set.tasks, "tuning")
        return moves, proposals, now

    moves, proposals, now = asyncio.run(propose())
    assert [m.rule().params()["threshold"] for m in moves] == [0.5, 0.7]  # neighbours on the grid
    for move in moves:
        params = move.rule().params()
        assert {k: v for k, v in params.items() if k != "threshold"} == {
            k: v for k, v in current.params.items() if k != "threshold"
        }
    incumbent_right = sum(r.grade.correct for r in now) / len(now)
    (up,) = [m for m in moves if m.rule().params()["threshold"] > 0.6]
    assert float(up.run.correct.mean()) > incumbent_right  # escalating more is right more
    (moved,) = [p for p in proposals if "answer-aware τ move (λ=0)" in p.rationale]
    (folder,) = moved.folders
    assert folder.policy.params == up.rule().params()
    for proposal in proposals:  # each puts one policy folder in charge of DATE
        (folder,) = proposal.folders
        assert proposal.strategy.plan_for("date").first == str(folder.path)
        assert folder.policy.kind in ("vote", "model-switch", "mot-cascade", "scorer-cascade")
    (task,) = task_set.tasks[:1]
    assert answer_kind_of(task, MathGrader()) == "date"  # the records say so, whatever the grader
    plain = Task("q", "What is 2 + 2?", "arithmetic", "test")
    assert answer_kind_of(plain, MathGrader()) == "latex"
    assert answer_kind_of(plain, ReplayGrader()) is None
