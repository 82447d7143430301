"""Tool steps of the workflow language (`vote`, `check`, `select`): parsed and validated, run by
the DAG executor over the HTTP replay of recorded outputs without a model call, traced and drawn.

On recorded outputs a model step's answer is its model's recorded sample whatever it is shown, so
a workflow of model steps scores what its last step's model scores; "ask three, then vote" gives
the weighted vote's answer per question (the records runner's rule, checked question by
question), costs the three calls only, and scores above asking the last of the three alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from consortium.coord.answers.folder import AnswerPolicy, write_policy
from consortium.coord.answers.rules import WeightedVote
from consortium.coord.answers.scored import ScorerPick
from consortium.coord.conductor.executor import WorkflowExecutor, WorkflowRun
from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.prompt import system_prompt
from consortium.coord.conductor.templates import WorkflowCoordinator, template
from consortium.coord.conductor.tools import SUBTASKS, TOOLS, AnswerTools, Scorer
from consortium.coord.conductor.workflow import (
    WorkflowAccessError,
    WorkflowModelError,
    build,
    parse_workflow,
)
from consortium.coord.registry import build_coordinator
from consortium.core.errors import ConfigError, ConsortiumError, CoordinatorError
from consortium.evaluation.recorded.rule_runs import play
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evaluation.results import TaskResult
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import load_pool, parse_pool
from consortium.records import load_records
from consortium.records.corpora import RECIPES
from consortium.records.tasks import RecordsGrader, records_tasks
from consortium.runtime.budget import Limits
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from consortium.tasks.code_checks import check_reply
from consortium.train.answers.policy import fit_answer_policy
from consortium.train.conductor.workflow_reward import FORMAT_FAIL, RIGHT, WRONG, score_rollout
from consortium.train.conductor.workflow_validity import WorkflowShape, workflow_shape
from consortium.viewer.dag import dag_svg, traced_workflows
from consortium.viewer.html import Palette
from consortium.viewer.queries import run_models, run_totals
from tests.helpers import ReplayServers, SharedRecords, recorded_first_samples, run_on_records
from tests.scripted_server import scripted_server

pytestmark = pytest.mark.slow  # servers and records imports: tens of seconds

ROSTER = ["alpha", "beta", "gamma"]
TRIO = ("gpt-4o-mini-2024-07-18", "gemini-1.5-pro", "gpt-4o")
"""Three chat models of the GSM8K records; the last is the one a workflow without a tool step
would answer with."""
QUESTIONS = 100
ASK_THREE_THEN_VOTE = (
    'model_id = [0, 1, 2, "vote"]\n'
    'subtasks = ["Solve it.", "Solve it another way.", "Solve it once more.", ""]\n'
    'access_list = [[], [], [], "all"]'
)


# --- the language ---------------------------------------------------------------------------


def test_a_tool_step_parses_by_name_with_no_subtask_and_round_trips() -> None:
    workflow = parse_workflow(ASK_THREE_THEN_VOTE, ROSTER)
    vote = workflow.steps[3]
    assert (vote.model, vote.tool, vote.visible) == ("vote", True, (0, 1, 2))
    assert vote.subtask == SUBTASKS["vote"]  # "" gives the tool's own description
    assert not any(step.tool for step in workflow.steps[:3])
    assert parse_workflow(workflow.to_text(ROSTER), ROSTER) == workflow
    # any case, a None subtask, an explicit list of earlier steps
    text = 'model_id = [1, 0, " Check "]\nsubtasks = ["a", "b", None]\naccess_list = [[], [], [1]]'
    check = parse_workflow(text, ROSTER).steps[2]
    assert (check.model, check.tool, check.visible) == ("check", True, (1,))
    assert build(["alpha", "beta", "vote"], ["a", "b", ""], [(), (), "all"]).steps[2].tool


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        (  # a tool with nothing to combine
            'model_id = [0, "vote"]\nsubtasks = ["a", ""]\naccess_list = [[], []]',
            WorkflowAccessError,
            "workflow: step 1, access_list: the tool 'vote' combines the answers of earlier steps",
        ),
        (  # "all" at step 0 sees nothing either
            'model_id = ["check", 0]\nsubtasks = ["", "a"]\naccess_list = ["all", []]',
            WorkflowAccessError,
            "workflow: step 0, access_list:",
        ),
        (
            'model_id = [0, 1, "select"]\nsubtasks = ["a", "b", ""]\naccess_list = [[], [], "all"]',
            WorkflowModelError,
            "workflow: step 2, model_id: the tool 'select' needs a learned answer scorer, and none "
            "was given (tools: vote, check, accept)",
        ),
        (
            'model_id = [0, 1, "rank"]\nsubtasks = ["a", "b", ""]\naccess_list = [[], [], "all"]',
            WorkflowModelError,
            "workflow: step 2, model_id: 'rank' is not a worker of this pool (recursion is off) "
            "nor a tool (vote, check, accept)",
        ),
    ],
)
def test_bad_tool_steps_are_one_typed_line(text: str, error: type[Exception], says: str) -> None:
    with pytest.raises(error) as raised:
        parse_workflow(text, ROSTER)
    assert str(raised.value).startswith(says)
    assert "\n" not in str(raised.value)


def test_select_is_offered_only_with_a_scorer() -> None:
    text = 'model_id = [0, 1, "select"]\nsubtasks = ["a", "b", ""]\naccess_list = [[], [], "all"]'
    scorer = Scorer(tuple(ROSTER), (0.0,) * (3 * len(ROSTER) + 5))
    tools = AnswerTools(scorer=scorer)
    assert tools.available == TOOLS
    assert parse_workflow(text, ROSTER, tools=tools.available).steps[2].model == "select"
    # the prompt offers what the parser accepts
    assert '"select"' in system_prompt(ROSTER, {}, tools=tools.available)
    plain = system_prompt(ROSTER, {})
    assert '"vote"' in plain and '"check"' in plain and '"select"' not in plain
    # a fixed workflow with `select` on an executor without a scorer is refused when built
    with pytest.raises(CoordinatorError, match="step 2 is the tool 'select'"):
        WorkflowCoordinator(parse_workflow(text, ROSTER, tools=TOOLS), "w", WorkflowExecutor())
    with pytest.raises(CoordinatorError, match="weights"):
        Scorer(tuple(ROSTER), (0.0, 1.0))


def test_a_pool_model_named_like_a_tool_is_refused_in_one_line() -> None:
    for attempt in (
        lambda: parse_workflow(ASK_THREE_THEN_VOTE, ["alpha", "vote", "gamma"]),
        lambda: ConductorCoordinator("boss", ["alpha", "Vote"]),
        lambda: template("moa", ["alpha", "check"]),
    ):
        with pytest.raises(CoordinatorError) as raised:
            attempt()
        assert "has the name of a workflow tool (vote, check, accept, select)" in str(raised.value)
        assert "\n" not in str(raised.value)
    pool = parse_pool(
        {
            "models": [
                {"name": name, "model": name, "base_url": "http://127.0.0.1:9/v1"}
                for name in ("boss", "alpha", "vote")
            ]
        }
    )
    with pytest.raises(ConsortiumError, match="rename the model in the pool file"):
        build_coordinator("conductor:boss", pool)


def test_the_training_gate_and_shape_accept_tool_steps() -> None:
    assert workflow_shape(ASK_THREE_THEN_VOTE, ROSTER) == WorkflowShape(4, 3, "vote")


# --- running on the HTTP replay of GSM8K records -------------------------------------------


@pytest.fixture(scope="module")
def gsm8k(real: Path, shared_records: SharedRecords) -> Path:
    """GSM8K's records of the three chat models the workflows ask (all 1,319 questions, so the
    split and the first test questions are the full import's), imported once a session."""
    models = [part.imported.files[0].model for part in RECIPES["gsm8k"].parts(real)]
    return shared_records("gsm8k", None, leave_out=tuple(m for m in models if m not in TRIO))


@dataclass
class Measured:
    store: TraceStore
    tasks: list[Task]
    vote: list[TaskResult]
    singles: dict[str, list[TaskResult]]
    scored: list[TaskResult]
    gate: list[float]
    scorer: Scorer
    policy: AnswerPolicy


async def _evaluate(
    coordinator: WorkflowCoordinator, tasks: list[Task], caller: Caller
) -> list[TaskResult]:
    return await run_policy(coordinator, tasks, RecordsGrader("number"), caller, concurrency=16)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def measured(
    gsm8k: Path, replay_servers: ReplayServers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Measured]:
    folder = tmp_path_factory.mktemp("tools")
    tasks = records_tasks(str(gsm8k), "test")[0][:QUESTIONS]
    policy = fit_answer_policy("scorer", gsm8k).policy  # fitted on the train split
    scorer = Scorer(tuple(policy.params["models"]), tuple(policy.params["weights"]))
    vote = WorkflowCoordinator(
        parse_workflow(ASK_THREE_THEN_VOTE, TRIO), "ask three, then vote", WorkflowExecutor()
    )
    selecting = WorkflowExecutor(tools=AnswerTools(scorer=scorer))
    scored = WorkflowCoordinator(
        parse_workflow(ASK_THREE_THEN_VOTE.replace('"vote"', '"select"'), TRIO, tools=TOOLS),
        "ask three, then select",
        selecting,
    )
    pool_file = folder / "replay.toml"
    store = TraceStore(f"sqlite:///{folder / 'traces.db'}")
    with replay_servers(None, "--write-pool", str(pool_file), records=[gsm8k]):
        pool = Pool(load_pool(pool_file))
        caller = Caller(pool, store, store.start_run("test", pool="records/gsm8k"))
        try:
            results = await _evaluate(vote, tasks, caller)
            singles = {
                model: await _evaluate(
                    WorkflowCoordinator(template("single", [model]), f"single {model}"),
                    tasks,
                    caller,
                )
                for model in TRIO
            }
            selected = await _evaluate(scored, tasks[:30], caller)
            gate = [
                (
                    await score_rollout(
                        text,
                        task,
                        list(TRIO),
                        RecordsGrader("number"),
                        caller,
                        max_steps=5,
                        task_limits=Limits(max_calls=5),
                        executor=WorkflowExecutor(),
                    )
                ).reward
                for task in tasks[:3]
                for text in (ASK_THREE_THEN_VOTE, "model_id = [0, 'vote']")
            ]
        finally:
            await pool.aclose()
    yield Measured(store, tasks, results, singles, selected, gate, scorer, policy)
    store.close()


def _run(result: TaskResult) -> WorkflowRun:
    assert result.outcome is not None and result.outcome.workflow is not None, result.error
    return result.outcome.workflow


def test_ask_three_then_vote_gives_the_weighted_vote_per_question(
    measured: Measured, gsm8k: Path
) -> None:
    table = outcome_table(load_records(gsm8k))
    index = {q: i for i, q in enumerate(table.question_ids)}
    rule = WeightedVote(TRIO, {model: 1.0 for model in TRIO})  # the records runner's vote
    recorded = recorded_first_samples(gsm8k)
    differ = []
    for result in measured.vote:
        played = play(rule, table, index[result.task.id])
        assert played.chosen is not None
        expected = played.seen[played.chosen].model
        run = _run(result)
        assert run.selected is not None
        chosen = run.steps[run.selected].step.model
        if chosen != expected or result.answer != recorded[(result.task.id, expected)]:
            differ.append((result.task.id, chosen, expected))
    assert not differ, f"{len(differ)} of {len(measured.vote)} differ, e.g. {differ[:3]}"
    assert len(measured.vote) == QUESTIONS


def test_the_vote_costs_only_the_three_calls(measured: Measured) -> None:
    for result in measured.vote:
        rows = measured.store.task_calls(measured.store.list_runs()[0]["run_id"], result.task.id)
        mine = [r for r in rows if r["policy"] == "ask three, then vote"]
        models = [r for r in mine if r["role"] == "worker"]
        tools = [r for r in mine if r["role"] == "tool"]
        assert result.calls == 3 == len(models)
        assert result.tokens == sum(r["prompt_tokens"] + r["completion_tokens"] for r in models)
        assert result.cost == pytest.approx(sum(r["cost"] for r in models))
        assert len(tools) == 1
        (tool,) = tools
        assert (tool["model"], tool["prompt_tokens"], tool["completion_tokens"], tool["cost"]) == (
            "vote",
            0,
            0,
            0.0,
        )
        assert tool["verdict"] == f"step {_run(result).selected}"
        assert tool["response"] == result.answer


def test_the_trace_and_the_viewer_show_the_tool_step(measured: Measured) -> None:
    run_id = measured.store.list_runs()[0]["run_id"]
    result = measured.vote[0]
    rows = [
        r
        for r in measured.store.task_calls(run_id, result.task.id)
        if r["policy"] == "ask three, then vote"
    ]
    (workflow,) = traced_workflows(rows)
    assert [step.call["model"] for step in workflow.steps] == [*TRIO, "vote"]
    assert [step.tool for step in workflow.steps] == [False, False, False, True]
    assert workflow.steps[3].visible == (0, 1, 2)
    svg = dag_svg(workflow, Palette(TRIO))
    assert f"vote → step {_run(result).selected}" in svg
    assert "data-tool='1'" in svg
    notes = result.outcome.notes if result.outcome else ()
    assert any(note.startswith("the vote (step 3) gave step") for note in notes), notes
    # the viewer's call totals and model list leave the tool rows out
    every = list(measured.store.iter_calls(run_id))
    tool_rows = [r for r in every if r["role"] == "tool"]
    assert len(tool_rows) == len(measured.vote) + len(measured.scored) + 3  # + 3 from the gate
    assert run_totals(measured.store.engine, run_id)[0] == len(every) - len(tool_rows)
    assert set(run_models(measured.store.engine, run_id)) == set(TRIO)


def test_on_recorded_outputs_ask_three_then_vote_scores_above_asking_one(
    measured: Measured,
) -> None:
    """Without a tool step the same three calls score what their last model (gpt-4o) scores;
    the vote scores more on the first 100 test questions."""
    voted = sum(r.grade.correct for r in measured.vote)
    alone = {
        model: sum(r.grade.correct for r in results) for model, results in measured.singles.items()
    }
    print(f"first {QUESTIONS} GSM8K test questions: ask three, then vote {voted}; ask one {alone}")
    assert all(r.calls == 1 for results in measured.singles.values() for r in results)
    last = TRIO[-1]
    grader = RecordsGrader("number")
    # the same three calls answering with their last step, as a workflow without the tool does
    unvoted = sum(grader.grade(r.task, _run(r).steps[2].output).correct for r in measured.vote)
    assert unvoted == alone[last]
    assert voted > alone[last]
    assert voted >= max(alone.values())


def test_select_is_the_learned_scorers_pick(measured: Measured, gsm8k: Path) -> None:
    table = outcome_table(load_records(gsm8k))
    index = {q: i for i, q in enumerate(table.question_ids)}
    rule = ScorerPick(measured.scorer.models, TRIO, measured.scorer.weights)
    for result in measured.scored:
        played = play(rule, table, index[result.task.id])
        assert played.chosen is not None
        run = _run(result)
        assert run.selected is not None
        assert run.steps[run.selected].step.model == played.seen[played.chosen].model
        assert result.calls == 3


def test_the_grpo_reward_runs_tool_workflows(measured: Measured) -> None:
    """The format gate lets a tool workflow through (RIGHT or WRONG as graded, never
    FORMAT_FAIL); a text without the three lists is still a format failure."""
    voted, broken = measured.gate[0::2], measured.gate[1::2]
    expected = [RIGHT if r.grade.correct else WRONG for r in measured.vote[:3]]
    assert voted == expected
    assert broken == [FORMAT_FAIL] * 3


# --- check on code (HumanEval records) -------------------------------------------------------

CODERS = ("codellama-34b-instruct", "gpt-3.5-turbo", "gpt-4")
CODE_TASKS = 16
CODE_QUESTIONS = 40
"""HumanEval's first 40 problems, whose test split's first 16 are the tasks asked."""


async def test_check_passes_on_the_first_program_that_passes_its_docstring_examples(
    shared_records: SharedRecords, tmp_path: Path
) -> None:
    humaneval = shared_records("humaneval", CODE_QUESTIONS)
    tasks = records_tasks(str(humaneval), "test")[0][:CODE_TASKS]
    workflow = build([*CODERS, "check"], ["Write the function."] * 3 + [""], [(), (), (), "all"])
    coordinator = WorkflowCoordinator(workflow, "ask three, then check")
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    (results,), _ = await run_on_records(
        humaneval, [coordinator], tasks, RecordsGrader("code"), store, tmp_path / "replay.toml"
    )
    recorded = recorded_first_samples(humaneval)
    rescued = 0
    for result in results:
        run = _run(result)
        passing = [
            check_reply(result.task.question, recorded[(result.task.id, m)]).passed for m in CODERS
        ]
        expected = passing.index(True) if any(passing) else 0
        assert run.selected == expected, (result.task.id, passing, run.steps[3].reason)
        assert result.answer == recorded[(result.task.id, CODERS[expected])]
        assert result.calls == 3
        rescued += not passing[0] and any(passing)
    first_right = sum(
        RecordsGrader("code").grade(r.task, recorded[(r.task.id, CODERS[0])]).correct
        for r in results
    )
    checked_right = sum(r.grade.correct for r in results)
    print(
        f"first {CODE_TASKS} HumanEval test tasks: {CODERS[0]} alone {first_right} right; "
        f"ask three, then check {checked_right}; the check passed over a failing first program "
        f"{rescued} times"
    )
    assert rescued > 0
    assert checked_right > first_right
    store.close()


async def test_a_conductor_that_writes_a_vote_gets_the_votes_answer(
    measured: Measured, gsm8k: Path, replay_servers: ReplayServers, tmp_path: Path
) -> None:
    """A scripted conductor LM (the records hold none) writes "ask three, then vote"; its prompt
    offered the tools, and every answer is the one the fixed workflow's vote gave."""
    tasks = measured.tasks[:5]
    pool_file = tmp_path / "replay.toml"
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    prompts: list[str] = []

    def conductor(messages: list[dict[str, Any]]) -> str:
        prompts.append(str(messages[0]["content"]))
        return "<think>Three answers, then a vote.</think>\n" + ASK_THREE_THEN_VOTE

    with (
        replay_servers(None, "--write-pool", str(pool_file), records=[gsm8k]),
        scripted_server({"boss": conductor}) as scripted,
    ):
        entries = [
            m.model_dump(mode="json", exclude_none=True) for m in load_pool(pool_file).models
        ]
        entries.append({"name": "boss", "base_url": scripted.base_url, "model": "boss"})
        config = parse_pool({"models": entries})
        policy = build_coordinator(f"conductor:boss:workers={','.join(TRIO)}", config)
        pool = Pool(config)
        caller = Caller(pool, store, store.start_run("test"))
        try:
            results = await run_policy(policy, tasks, RecordsGrader("number"), caller)
        finally:
            await pool.aclose()
    fixed = {r.task.id: r.answer for r in measured.vote}
    assert [r.answer for r in results] == [fixed[t.id] for t in tasks]
    assert all(r.calls == 4 for r in results)  # the conductor and three workers; the vote is free
    assert len(prompts) == len(tasks)
    assert all('"vote"' in p and '"check"' in p and '"select"' not in p for p in prompts)
    store.close()


def test_the_conductor_spec_takes_the_answer_kind_and_a_scorer_folder(
    measured: Measured, tmp_path: Path
) -> None:
    write_policy(tmp_path / "scorer", measured.policy)
    entries = [
        {"name": name, "model": name, "base_url": "http://127.0.0.1:9/v1"}
        for name in ("boss", *TRIO)
    ]
    config = parse_pool({"models": entries})
    spec = f"conductor:boss:workers={','.join(TRIO)}"
    plain = build_coordinator(spec, config)
    assert isinstance(plain, ConductorCoordinator)
    assert plain.executor.tools == AnswerTools()
    scored = build_coordinator(f"{spec}:answers=latex:tools={tmp_path / 'scorer'}", config)
    assert isinstance(scored, ConductorCoordinator)
    tools = scored.executor.tools
    assert (tools.answer_kind, tools.scorer, tools.available) == ("latex", measured.scorer, TOOLS)
    assert '"select"' in scored.messages("What is 2 + 2?")[0]["content"]
    with pytest.raises(ConfigError) as raised:
        build_coordinator(f"{spec}:answers=prose", config)
    assert str(raised.value) == (
        f"--policy '{spec}:answers=prose': answers: expected one of number, latex, choice, "
        "code, date, text, got 'prose'"
    )
