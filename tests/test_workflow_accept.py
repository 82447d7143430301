"""The `accept` tool step: it ends the workflow with an answer the steps it sees confirm, and
every later step waits for it, so "ask a cheap model, accept, ask a costly one" pays for the
costly one only when the cheap answer is not confirmed (a cascade written in the workflow
language). Its rule, its place in the DAG, its run against real HTTP servers (scripted and the
replay of recorded HumanEval programs), its trace row and the GRPO reward's cost."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consortium.coord.answers.rules import NO_ANSWER, Seen
from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.prompt import system_prompt
from consortium.coord.conductor.templates import WorkflowCoordinator
from consortium.coord.conductor.tool_steps import accept
from consortium.coord.conductor.tools import AnswerTools
from consortium.coord.conductor.workflow import build, parse_workflow
from consortium.pool import Pool
from consortium.pool.config import parse_pool
from consortium.records.tasks import RecordsGrader, records_tasks
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from consortium.tasks.code_checks import check_reply
from consortium.train.conductor.measure import SetFigures
from consortium.train.conductor.workflow_reward import score_rollout
from consortium.viewer.dag import dag_svg, traced_workflows
from consortium.viewer.html import Palette
from tests.helpers import SharedRecords, recorded_first_samples, run_on_records
from tests.scripted_server import ScriptedServer, scripted_server

CASCADE = build(
    ["cheap", "second", "accept", "costly"],
    ["Solve it.", "Solve it.", "", "Solve it carefully."],
    [(), (), (0, 1), ()],
)
"""Two cheap answers; when they agree the workflow ends, otherwise the costly model answers."""
QUESTION = Task("q", "What is 6 * 7?", "arith", "test", "42")


# --- the rule and the DAG --------------------------------------------------------------------


def test_accept_confirms_agreeing_answers_or_a_program_that_passes() -> None:
    agree = [Seen("a", 0, 1), Seen("b", 0, 1)]
    assert accept(agree).ends and accept(agree).position == 0
    differ = [Seen("a", 0, 1), Seen("b", 0, 2)]
    assert not accept(differ).ends
    assert "the answers differ" in accept(differ).reason
    assert not accept([Seen("a", 0, 1)]).ends  # one answer confirms nothing
    assert not accept([Seen("a", 0, NO_ANSWER), Seen("b", 0, NO_ANSWER)]).ends
    # programs that were checked: the first that passes, alone or not
    programs = [Seen("a", 0, 1, checked=False), Seen("b", 0, 2, checked=True)]
    assert (accept(programs).ends, accept(programs).position) == (True, 1)
    assert accept([Seen("a", 0, 1, checked=True)]).ends
    assert not accept([Seen("a", 0, 1, checked=False), Seen("b", 0, 1, checked=False)]).ends


def test_every_later_step_waits_for_an_accept() -> None:
    # the costly step sees nothing, yet starts only after the accept
    assert CASCADE.waits_for(3) == (2,)
    assert CASCADE.waits_for(2) == (0, 1)
    assert CASCADE.waits_for(1) == ()
    assert CASCADE.critical_path([1.0, 2.0, 0.0, 4.0]) == 6.0
    # without the accept the costly step would start at once
    no_stop = build(["cheap", "second", "vote", "costly"], ["a", "b", "", "c"], [(), (), "all", ()])
    assert no_stop.waits_for(3) == ()
    assert no_stop.critical_path([1.0, 2.0, 0.0, 4.0]) == 4.0


def test_the_prompt_and_the_parser_offer_accept() -> None:
    text = (
        'model_id = [0, "accept", 1]\nsubtasks = ["Solve it.", "", "Solve it."]\n'
        "access_list = [[], [0], []]"
    )
    workflow = parse_workflow(text, ["small", "large"])
    assert [(s.model, s.tool) for s in workflow.steps] == [
        ("small", False),
        ("accept", True),
        ("large", False),
    ]
    assert '"accept": ends the workflow' in system_prompt(["small", "large"], {})


# --- running against a scripted OpenAI-compatible server -------------------------------------


@pytest.fixture
def team() -> Iterator[tuple[ScriptedServer, dict[str, str]]]:
    """Three scripted models whose replies each test sets."""
    replies = {"cheap": "6 * 7 = 42. The answer is 42.", "second": "The answer is 42."}
    replies["costly"] = "Carefully: 42. The answer is 42."
    scripts: dict[str, Any] = {name: (lambda _m, n=name: replies[n]) for name in replies}
    with scripted_server(scripts) as server:
        yield server, replies


@pytest.mark.parametrize("sequential", [False, True])
async def test_agreeing_cheap_answers_end_the_workflow_before_the_costly_call(
    team: tuple[ScriptedServer, dict[str, str]], sequential: bool
) -> None:
    server, replies = team
    entries = [{"name": n, "base_url": server.base_url, "model": n} for n in replies]
    pool = Pool(parse_pool({"models": entries}))
    store = TraceStore("sqlite://")
    caller = Caller(pool, store, store.start_run("test"))
    executor = WorkflowExecutor(tools=AnswerTools(answer_kind="number"), sequential=sequential)
    try:
        agreed = caller.for_task("agree", "cascade")
        run = await executor.run(CASCADE, QUESTION.question, agreed, task=QUESTION)
        assert sorted(r["model"] for r in server.requests) == ["cheap", "second"]
        assert [s.step.model for s in run.steps] == ["cheap", "second", "accept"]
        assert run.answer == replies["cheap"] and run.selected == 0
        assert agreed.budget.calls == 2
        assert any("ended the workflow: 1 later step(s) not run" in n for n in run.notes)
        (tool,) = [r for r in store.task_calls(caller.run_id, "agree") if r["role"] == "tool"]
        assert (tool["model"], tool["verdict"], tool["cost"]) == ("accept", "step 0, ended", 0.0)
        # the viewer draws the steps that ran, the accept labelled with what it did
        (traced,) = traced_workflows(store.task_calls(caller.run_id, "agree"))
        assert [step.call["model"] for step in traced.steps] == ["cheap", "second", "accept"]
        assert "accept → step 0, ended" in dag_svg(traced, Palette(list(replies)))
        # the training reward: right, two calls, and a run the accept ended is not a failed one
        scored = await score_rollout(
            CASCADE.to_text(list(replies)),
            QUESTION,
            list(replies),
            RecordsGrader("number"),
            caller,
            max_steps=5,
            task_limits=Limits(max_calls=5),
            executor=executor,
        )
        assert (scored.right, scored.calls, scored.failed) == (True, 2, False)
        assert SetFigures.of([scored]).stopped == 0.0

        # the cheap answers differ: the workflow goes on and the costly model answers
        replies["second"] = "The answer is 48."
        server.requests.clear()
        differed = caller.for_task("differ", "cascade")
        run = await executor.run(CASCADE, QUESTION.question, differed, task=QUESTION)
        assert sorted(r["model"] for r in server.requests) == ["cheap", "costly", "second"]
        assert run.answer == replies["costly"]
        assert differed.budget.calls == 3
        assert run.steps[3].started >= run.steps[2].finished  # it waited for the accept
        (tool,) = [r for r in store.task_calls(caller.run_id, "differ") if r["role"] == "tool"]
        assert tool["verdict"] == "went on"
        (traced,) = traced_workflows(store.task_calls(caller.run_id, "differ"))
        assert [step.call["model"] for step in traced.steps][-2:] == ["accept", "costly"]
        drawn = dag_svg(traced, Palette(list(replies)))
        assert "accept → went on" in drawn
        # the costly step sees nothing but waited for the accept: drawn right of it, a dotted
        # arrow between, and no access arrow into it
        assert (traced.steps[3].visible, traced.steps[3].waits) == ((), (2,))
        assert "class='wait' data-from='2' data-to='3'" in drawn
        assert "data-to='3'" not in drawn.replace("class='wait' data-from='2' data-to='3'", "")
        boxes = dict(re.findall(r"data-step='(\d)'.*?<rect x='([\d.]+)'", drawn))
        assert float(boxes["3"]) > float(boxes["2"]) > float(boxes["0"])
        assert not any("ended the workflow" in n for n in run.notes)
    finally:
        await pool.aclose()
        store.close()


# --- a cascade on recorded HumanEval programs, over the HTTP replay --------------------------

CHEAP, COSTLY = "codellama-34b-instruct", "gpt-4"
CODE_TASKS = 16
CODE_QUESTIONS = 40


async def test_a_cascade_on_recorded_programs_calls_the_costly_model_only_when_needed(
    shared_records: SharedRecords, tmp_path: Path
) -> None:
    humaneval = shared_records("humaneval", CODE_QUESTIONS)
    tasks = records_tasks(str(humaneval), "test")[0][:CODE_TASKS]
    cascade = build(
        [CHEAP, "accept", COSTLY],
        ["Write the function.", "", "Write the function."],
        [(), (0,), ()],
    )
    alone = build([COSTLY], ["Write the function."], [()])
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    (results, costly), run_id = await run_on_records(
        humaneval,
        [WorkflowCoordinator(cascade, "cascade"), WorkflowCoordinator(alone, "costly alone")],
        tasks,
        RecordsGrader("code"),
        store,
        tmp_path / "replay.toml",
    )
    recorded = recorded_first_samples(humaneval)
    accepted = 0
    for result in results:
        passes = check_reply(result.task.question, recorded[(result.task.id, CHEAP)]).passed
        assert result.answer == recorded[(result.task.id, CHEAP if passes else COSTLY)]
        called = [
            r["model"]
            for r in store.task_calls(run_id, result.task.id)
            if r["policy"] == "cascade" and r["role"] == "worker"
        ]
        assert called == ([CHEAP] if passes else [CHEAP, COSTLY])
        assert result.calls == len(called)
        accepted += passes
    spent, spent_alone = sum(r.cost for r in results), sum(r.cost for r in costly)
    print(
        f"first {CODE_TASKS} HumanEval test tasks: the cascade accepted {CHEAP}'s program "
        f"{accepted} times; it cost {spent:.4f} $ against {spent_alone:.4f} $ for {COSTLY} "
        f"alone; right: {sum(r.grade.correct for r in results)} against "
        f"{sum(r.grade.correct for r in costly)}"
    )
    assert 0 < accepted < len(results)  # both branches ran
    assert spent < spent_alone
    store.close()
