"""The workflow executor (DAG concurrency, access lists) against the replay server, and the
Conductor (conductor LM, recursion caps, fallback) with a scripted conductor endpoint."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import TEMPLATES, WorkflowCoordinator, template
from consortium.coord.conductor.workflow import WorkflowModelError, WorkflowSyntaxError, build
from consortium.core.errors import AgentError, BudgetExceeded
from consortium.pool import Pool
from consortium.pool.config import parse_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller, TaskCaller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from tests.helpers import replay_caller
from tests.scripted_server import ScriptedServer, scripted_server

LATENCY = 0.3


@pytest.fixture(scope="module")
def slow_server(replay_dir: Path) -> Iterator[ReplayServerProcess]:
    with ReplayServerProcess(replay_dir, "--latency-base", str(LATENCY)) as server:
        yield server


@pytest.fixture(scope="module")
def question(replay_data: ReplayData) -> Task:
    return load_replay_tasks(replay_data, datasets=["gsm8k"], limit=1).tasks[0]


def new_caller(replay_data: ReplayData, base_url: str, tmp_path: Path) -> tuple[Caller, TraceStore]:
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    return replay_caller(replay_data, base_url, store), store


async def test_steps_with_disjoint_inputs_overlap_in_time(
    replay_data: ReplayData, slow_server: ReplayServerProcess, question: Task, tmp_path: Path
) -> None:
    caller, _ = new_caller(replay_data, slow_server.base_url, tmp_path)
    names = caller.pool.names
    # 0, 1, 2 see nothing of each other; 3 sees 0 only; 4 sees everything.
    workflow = build(names[:5], ["a", "b", "c", "d", "e"], [(), (), (), (0,), "all"])
    await WorkflowExecutor().run(workflow, question.question, caller.for_task("warm", "t"))

    started = time.perf_counter()
    run = await WorkflowExecutor().run(workflow, question.question, caller.for_task("dag", "t"))
    dag_wall = time.perf_counter() - started
    steps = run.steps
    # The three independent steps all start before any of them finishes.
    assert max(s.started for s in steps[:3]) < min(s.finished for s in steps[:3])
    # Step 3 waits for step 0 only, not for the whole first layer to be gone through serially.
    assert steps[3].started >= steps[0].finished
    assert steps[4].started >= max(s.finished for s in steps[:4])

    started = time.perf_counter()
    run = await WorkflowExecutor(sequential=True).run(
        workflow, question.question, caller.for_task("seq", "t")
    )
    sequential_wall = time.perf_counter() - started
    assert sequential_wall >= 5 * LATENCY
    # Critical path: 3 calls; sequential: 5 calls, the same 5 calls. Compared with each other,
    # not with a fixed bound, so a loaded machine slows both alike.
    assert dag_wall < sequential_wall - LATENCY
    assert all(a.finished <= b.started for a, b in zip(run.steps, run.steps[1:], strict=False))


async def test_a_step_waits_only_on_what_it_may_see(
    replay_data: ReplayData, slow_server: ReplayServerProcess, question: Task, tmp_path: Path
) -> None:
    caller, _ = new_caller(replay_data, slow_server.base_url, tmp_path)
    names = caller.pool.names
    workflow = build(names[:3], ["a", "b", "c"], [(), (0,), ()])
    run = await WorkflowExecutor().run(workflow, question.question, caller.for_task("x", "t"))
    step0, step1, step2 = run.steps
    assert step2.started < step0.finished  # independent of 0: starts at once
    assert step1.started >= step0.finished
    assert run.answer == step2.output  # the last step's output is the answer


async def test_each_worker_sees_exactly_what_its_access_list_names(
    replay_data: ReplayData, replay_server: ReplayServerProcess, question: Task, tmp_path: Path
) -> None:
    caller, store = new_caller(replay_data, replay_server.base_url, tmp_path)
    names = caller.pool.names
    subtasks = ["first attempt", "second attempt", "check the first", "final answer"]
    workflow = build(names[:4], subtasks, [(), (), (0,), "all"])
    run = await WorkflowExecutor().run(workflow, question.question, caller.for_task("q", "t"))
    calls = {c["turn"]: c for c in store.iter_calls(caller.run_id)}
    assert sorted(calls) == [1, 2, 3, 4]
    outputs = [s.output for s in run.steps]

    def seen(turn: int) -> list[dict[str, str]]:
        return list(json.loads(calls[turn]["messages"]))

    for turn in (1, 2):  # nothing earlier
        messages = seen(turn)
        assert len(messages) == 1 and messages[0]["content"].startswith(subtasks[turn - 1])
        assert question.question in messages[0]["content"]
    third = seen(3)
    assert [m["content"] for m in third[:2]] == [subtasks[0], outputs[0]]
    assert [m["role"] for m in third] == ["user", "assistant", "user"]
    assert subtasks[1] not in json.dumps(third)
    fourth = seen(4)
    assert [m["content"] for m in fourth[:-1]] == [
        subtasks[0],
        outputs[0],
        subtasks[1],
        outputs[1],
        subtasks[2],
        outputs[2],
    ]
    assert fourth[-1]["content"].startswith(subtasks[3])


async def test_a_failing_step_fails_the_workflow_with_its_error(
    replay_data: ReplayData, replay_server: ReplayServerProcess, tmp_path: Path
) -> None:
    caller, store = new_caller(replay_data, replay_server.base_url, tmp_path)
    names = caller.pool.names
    # A question that was never recorded: the replay server answers 404.
    workflow = build(names[:2], ["a", "b"], [(), "all"])
    with pytest.raises(AgentError, match="no recorded outcome"):
        await WorkflowExecutor().run(workflow, "an unrecorded question", caller.for_task("e", "t"))
    assert [c["error"] is not None for c in store.iter_calls(caller.run_id)] == [True]


async def test_baseline_templates_run_through_the_executor_and_grade(
    replay_data: ReplayData, replay_server: ReplayServerProcess, tmp_path: Path
) -> None:
    from consortium.evaluation.runner import evaluate_policies

    caller, _store = new_caller(replay_data, replay_server.base_url, tmp_path)
    names = caller.pool.names
    tasks = load_replay_tasks(replay_data, datasets=["mmlu"], limit=20).tasks
    policies = [WorkflowCoordinator(template(k, names[:3]), f"workflow:{k}") for k in TEMPLATES]
    summaries = await evaluate_policies(policies, tasks, ReplayGrader(), caller)
    steps = {k: len(template(k, names[:3])) for k in TEMPLATES}
    for summary, kind in zip(summaries, TEMPLATES, strict=True):
        assert summary.errors == 0
        assert summary.calls == steps[kind] * len(tasks)
        # On replay a model's answer does not depend on what it was shown, so each workflow
        # scores what its last step's model scores on these (0/1 recorded) questions.
        last = template(kind, names[:3]).steps[-1].model
        expected = sum(t.meta["p_correct"][_recorded(replay_data, last)] for t in tasks)
        assert summary.accuracy["mmlu"] == pytest.approx(expected / len(tasks))


def _recorded(data: ReplayData, name: str) -> str:
    return next(m for m in data.models["split2"] if m.endswith(name))


def workflow_text(ids: list[int], access: list[Any], prefix: str = "<think>plan</think>") -> str:
    subtasks = [f"step {i}" for i in range(len(ids))]
    return f"{prefix}\nmodel_id = {ids}\nsubtasks = {subtasks}\naccess_list = {access}"


@pytest.fixture
def conductor_pool(
    replay_data: ReplayData, replay_server: ReplayServerProcess
) -> Iterator[tuple[list[dict[str, Any]], ScriptedServer]]:
    """A pool of the replay workers plus a scripted `boss` conductor; yields the scripted
    server so each test sets what the conductor writes."""
    scripts: dict[str, Any] = {}
    with scripted_server(scripts) as server:
        entries: list[dict[str, Any]] = [
            m.model_dump(mode="json", exclude_none=True)
            for m in replay_pool(replay_data, replay_server.base_url).models
            if m.model in replay_data.models["split2"]
        ]
        entries.append({"name": "boss", "base_url": server.base_url, "model": "boss"})
        yield entries, server


def conductor_caller(entries: list[dict[str, Any]], tmp_path: Path) -> tuple[Caller, TraceStore]:
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    pool = Pool(parse_pool({"models": entries}))
    return Caller(pool, store, store.start_run("test")), store


def workers_of(entries: list[dict[str, Any]]) -> list[str]:
    return [e["name"] for e in entries if e["name"] != "boss"]


async def test_conductor_writes_and_runs_a_workflow(
    conductor_pool: tuple[list[dict[str, Any]], ScriptedServer], question: Task, tmp_path: Path
) -> None:
    entries, server = conductor_pool
    server.scripts["boss"] = lambda _m: workflow_text([1, 2, 0], [[], [], "all"])
    caller, store = conductor_caller(entries, tmp_path)
    workers = workers_of(entries)
    conductor = ConductorCoordinator("boss", workers)
    outcome = await conductor.run(question, caller.for_task(question.id, conductor.name))
    run = outcome.workflow
    assert [s.step.model for s in run.steps] == [workers[1], workers[2], workers[0]]
    assert outcome.answer == run.steps[-1].output
    calls = list(store.iter_calls(caller.run_id))
    assert [c["role"] for c in calls].count("conductor") == 1
    prompt = json.loads(calls[0]["messages"])
    assert "Model 6" in prompt[0]["content"] and "Model 7" not in prompt[0]["content"]
    assert question.question in prompt[1]["content"]


async def test_malformed_workflow_is_an_error_or_goes_to_the_fallback(
    conductor_pool: tuple[list[dict[str, Any]], ScriptedServer], question: Task, tmp_path: Path
) -> None:
    entries, server = conductor_pool
    server.scripts["boss"] = lambda _m: "I would ask model 3, then model 9."
    caller, store = conductor_caller(entries, tmp_path)
    workers = workers_of(entries)
    with pytest.raises(WorkflowSyntaxError, match="model_id"):
        await ConductorCoordinator("boss", workers).run(question, caller.for_task("a", "c"))
    conductor = ConductorCoordinator("boss", workers, fallback=workers[0])
    outcome = await conductor.run(question, caller.for_task("b", "c"))
    assert "fallback" in outcome.notes[0]
    assert "replay of" in outcome.answer
    roles = [c["role"] for c in store.iter_calls(caller.run_id) if c["task_id"] == "b"]
    assert roles == ["conductor", "fallback"]


def _is_inner(messages: list[dict[str, Any]]) -> bool:
    return "A workflow already ran" in messages[-1]["content"]


async def test_recursion_runs_an_inner_workflow_that_sees_the_outer_results(
    conductor_pool: tuple[list[dict[str, Any]], ScriptedServer], question: Task, tmp_path: Path
) -> None:
    entries, server = conductor_pool
    workers = workers_of(entries)
    me = len(workers)  # the conductor is the last model when recursion is on
    server.scripts["boss"] = lambda m: (
        workflow_text([3], [[]]) if _is_inner(m) else workflow_text([0, me], [[], "all"])
    )
    caller, store = conductor_caller(entries, tmp_path)
    conductor = ConductorCoordinator("boss", workers, recursion=True, max_depth=1)
    outcome = await conductor.run(question, caller.for_task("r", "c"))
    run = outcome.workflow
    inner = run.steps[1].inner
    assert inner is not None and inner.depth == 1
    assert outcome.answer == inner.answer == inner.steps[0].output
    assert outcome.conductor_calls == 2
    inner_prompt = next(m for m in map(lambda r: r["messages"], server.requests) if _is_inner(m))
    assert run.steps[0].output in inner_prompt[-1]["content"]  # it sees the outer result
    assert "Model 7" not in inner_prompt[0]["content"]  # depth cap: itself no longer offered
    roles = [c["role"] for c in store.iter_calls(caller.run_id)]
    assert roles.count("conductor@1") == 1 and roles.count("worker@1") == 1


async def test_depth_cap_and_empty_lists_pass_the_previous_answer_through(
    conductor_pool: tuple[list[dict[str, Any]], ScriptedServer], question: Task, tmp_path: Path
) -> None:
    entries, server = conductor_pool
    workers = workers_of(entries)
    me = len(workers)
    # The inner conductor tries to recurse again past the depth cap: refused, passed through.
    server.scripts["boss"] = lambda m: (
        workflow_text([me], [[]]) if _is_inner(m) else workflow_text([0, me], [[], [0]])
    )
    caller, _ = conductor_caller(entries, tmp_path)
    conductor = ConductorCoordinator("boss", workers, recursion=True, max_depth=1)
    outcome = await conductor.run(question, caller.for_task("d", "c"))
    run = outcome.workflow
    assert outcome.answer == run.steps[0].output
    assert any("out of range" in note for note in outcome.notes)

    server.scripts["boss"] = lambda m: (
        "model_id = []\nsubtasks = []\naccess_list = []"
        if _is_inner(m)
        else workflow_text([0, me], [[], [0]])
    )
    outcome = await conductor.run(question, caller.for_task("e", "c"))
    run = outcome.workflow
    assert outcome.answer == run.steps[0].output and outcome.notes == ()


async def test_conductor_call_cap_bounds_recursion(
    conductor_pool: tuple[list[dict[str, Any]], ScriptedServer], question: Task, tmp_path: Path
) -> None:
    entries, server = conductor_pool
    workers = workers_of(entries)
    me = len(workers)
    server.scripts["boss"] = lambda m: (
        workflow_text([me, me], [[], [0]])
        if _is_inner(m)
        else workflow_text([0, me, me, me], [[], [0], [0], [0]])
    )
    caller, store = conductor_caller(entries, tmp_path)
    conductor = ConductorCoordinator(
        "boss", workers, recursion=True, max_depth=3, max_conductor_calls=3
    )
    outcome = await conductor.run(question, caller.for_task("cap", "c"))
    assert outcome.conductor_calls == 3
    conductor_rows = [
        c for c in store.iter_calls(caller.run_id) if c["role"].startswith("conductor")
    ]
    assert len(conductor_rows) == 3
    assert any("call cap (3) reached" in note for note in outcome.notes)


async def test_task_budget_holds_inside_a_workflow(
    conductor_pool: tuple[list[dict[str, Any]], ScriptedServer], question: Task, tmp_path: Path
) -> None:
    entries, server = conductor_pool
    server.scripts["boss"] = lambda _m: workflow_text([0, 1, 2, 3], [[], [], [], "all"])
    caller, store = conductor_caller(entries, tmp_path)
    conductor = ConductorCoordinator("boss", workers_of(entries))
    task_caller: TaskCaller = caller.for_task("b", "c", Limits(max_calls=3))
    with pytest.raises(BudgetExceeded, match="call cap"):
        await conductor.run(question, task_caller)
    assert task_caller.budget.calls <= 3
    assert len(list(store.iter_calls(caller.run_id))) <= 3


def test_unknown_template_and_bad_conductor_setup() -> None:
    with pytest.raises(ValueError, match="unknown workflow template"):
        template("tree", ["a"])
    with pytest.raises(ValueError, match="both the conductor and a worker"):
        ConductorCoordinator("a", ["a", "b"])
    with pytest.raises(WorkflowModelError):
        from consortium.coord.conductor.workflow import parse_workflow

        parse_workflow(workflow_text([5], [[]]), ["a"])


async def test_short_recorded_questions_are_found_inside_a_step_prompt(
    replay_data: ReplayData, replay_server: ReplayServerProcess, tmp_path: Path
) -> None:
    """A step quotes the question after its subtask; the replay server must still find
    questions shorter than its substring index (e.g. 'Simplify $\\sqrt{245}$.')."""
    caller, _ = new_caller(replay_data, replay_server.base_url, tmp_path)
    tasks = load_replay_tasks(replay_data, datasets=["math_prealgebra"]).tasks
    short = min(tasks, key=lambda t: len(t.question))
    assert len(short.question) < 32
    names = caller.pool.names
    workflow = build(names[:2], ["Solve it.", "Check it."], [(), "all"])
    run = await WorkflowExecutor().run(workflow, short.question, caller.for_task("s", "t"))
    assert ReplayGrader().grade(short, run.answer).detail.startswith("final answer")


def test_template_shapes() -> None:
    from consortium.coord.conductor.templates import debate, mixture_of_agents, self_reflection

    assert [s.visible for s in debate(["a", "b"], rounds=2).steps] == [
        (),
        (),
        (0, 1),
        (0, 1),
        (2, 3),
    ]
    moa = mixture_of_agents(["b", "c"], "a", layers=2)
    assert [s.model for s in moa.steps] == ["b", "c", "b", "c", "a"]
    assert moa.steps[-1].visible == (2, 3)
    reflect = self_reflection("a", rounds=2)
    assert [s.visible for s in reflect.steps] == [(), (0,), (0, 1), (2,), (2, 3)]


async def test_a_models_repeated_steps_ask_for_its_next_sample(tmp_path: Path) -> None:
    # The seed is how many earlier steps went to the same model: each model's first step asks for
    # its first sample (all a recorded pool with one sample per model has), a repeat the next.
    scripts: dict[str, Any] = {name: lambda messages: "The answer is 1." for name in "ab"}
    with scripted_server(scripts) as server:
        entries = [{"name": n, "base_url": server.base_url, "model": n} for n in "ab"]
        caller, _ = conductor_caller(entries, tmp_path)
        subtasks = [f"step {i}" for i in range(5)]
        workflow = build(["a", "b", "a", "b", "a"], subtasks, [(), (), (), (), "all"])
        await WorkflowExecutor().run(workflow, "What is 0 + 1?", caller.for_task("s", "t"))
    seeds = {
        body["messages"][-1]["content"].split("\n")[0]: (body["model"], body["seed"])
        for body in server.requests
    }
    assert seeds == {
        "step 0": ("a", 0),
        "step 1": ("b", 0),
        "step 2": ("a", 1),
        "step 3": ("b", 1),
        "step 4": ("a", 2),
    }
