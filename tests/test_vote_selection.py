"""A vote's judge picks; the workflow returns the picked voter's own text, never the judge's
reply (issue 29: on the real llama.cpp pool, `workflow:judge-vote` answered "The answer is A.").
The real-model half of the check is in tests/test_real_models.py."""

from __future__ import annotations

from pathlib import Path

from consortium.coord.conductor.selection import select_candidate
from consortium.coord.conductor.templates import WorkflowCoordinator, majority_vote
from consortium.core.answers import final_answer
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import parse_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from tests.scripted_server import scripted_server


def test_the_judge_answer_picks_the_candidate_that_gives_it() -> None:
    candidates = ["x = 4, so the answer is 12.", "I get 11. The answer is 11.", "The answer is 12"]
    chosen = select_candidate("Most say 12. The answer is 12.", candidates)
    assert chosen is not None and (chosen.index, chosen.how) == (0, "judge")
    picked = select_candidate("The answer is 11.", candidates)
    assert picked is not None and (picked.index, picked.how) == (1, "judge")
    # A label that is no candidate's answer: the candidates' own majority decides.
    label = select_candidate("The answer is A.", ["The answer is Paris.", "Paris", "Lyon"])
    assert label is not None and (label.index, label.how) == (0, "majority")
    # On a multiple-choice question a letter is an answer, and it is matched as one.
    letter = select_candidate("The answer is A.", ["The answer is (B).", "The answer is A"])
    assert letter is not None and (letter.index, letter.how) == (1, "judge")
    assert select_candidate("The answer is 3.", []) is None


def _pool_with_scripted_judge(
    data: ReplayData, base_url: str, judge_url: str
) -> tuple[Pool, WorkflowCoordinator]:
    """Three recorded voters and a scripted judge, and the vote workflow over them."""
    voters = replay_pool(data, base_url, data.models["split2"][:3])
    entries = [m.model_dump(mode="json", exclude_none=True) for m in voters.models]
    entries.append({"name": "judge", "base_url": judge_url, "model": "judge"})
    vote = WorkflowCoordinator(majority_vote(voters.names, "judge"), "workflow:judge-vote")
    return Pool(parse_pool({"models": entries})), vote


async def test_vote_returns_a_voters_text_on_the_replay_pool(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    """Recorded voters on the replay server; the judge, a real HTTP server too, names a label
    ("The answer is A.") as the tiny llama.cpp judge did."""
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=3).tasks
    with scripted_server({"judge": lambda _messages: "The answer is A."}) as judge:
        pool, coordinator = _pool_with_scripted_judge(
            replay_data, replay_server.base_url, judge.base_url
        )
        store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
        caller = Caller(pool, store, store.start_run("eval"))
        async with pool:
            results = await run_policy(coordinator, tasks, ReplayGrader(), caller)
    for result in results:
        calls = [c for c in store.iter_calls(caller.run_id) if c["task_id"] == result.task.id]
        voters = {c["turn"]: c["response"] for c in calls if c["model"] != "judge"}
        judge_reply = next(c["response"] for c in calls if c["model"] == "judge")
        assert judge_reply == "The answer is A." and result.answer != judge_reply
        assert result.answer in voters.values()
        assert result.outcome is not None and result.outcome.workflow is not None
        picked = result.outcome.workflow.selected
        assert picked is not None and voters[picked + 1] == result.answer
        assert "majority" in result.outcome.notes[-1]


async def test_vote_keeps_the_judge_choice_when_it_names_an_answer(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    """A judge that repeats the last voter's answer picks that voter, even against a majority."""

    def repeat_last(messages: list[dict[str, str]]) -> str:
        last = [m["content"] for m in messages if m["role"] == "assistant"][-1]
        return "After comparing them: The answer is" + last.rsplit("The answer is", 1)[-1]

    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=2).tasks
    with scripted_server({"judge": repeat_last}) as judge:
        pool, coordinator = _pool_with_scripted_judge(
            replay_data, replay_server.base_url, judge.base_url
        )
        store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
        caller = Caller(pool, store, store.start_run("eval"))
        async with pool:
            results = await run_policy(coordinator, tasks, ReplayGrader(), caller)
    for result in results:
        assert result.outcome is not None and result.outcome.workflow is not None
        run = result.outcome.workflow
        assert run.selected is not None
        # The judge's answer is the last voter's; the pick is the first voter giving it.
        voters = [step.output for step in run.steps[:-1]]
        said = final_answer(voters[-1])
        assert run.selected == [final_answer(v) for v in voters].index(said)
        assert result.answer == voters[run.selected] != run.steps[-1].output
        assert run.notes[-1].startswith("the judge (step 3) gave step")
