"""`consortium conduct`, `eval --policy conductor:…/workflow:…` and `train conductor` as a user
runs them: real processes against the replay server and a scripted conductor endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import load_replay_tasks
from tests.conftest import data_dir
from tests.scripted_server import ScriptedServer, scripted_server
from tests.test_cli import cli, one_line_error

WORKFLOW = """<think>two attempts and a judge</think>
model_id = [0, 1, 2]
subtasks = ["Solve it.", "Solve it another way.", "Compare both and give the final answer."]
access_list = [[], [], "all"]"""


@pytest.fixture
def conductor_server() -> Iterator[ScriptedServer]:
    with scripted_server({"boss": lambda _messages: WORKFLOW}) as server:
        yield server


@pytest.fixture
def pool_file(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    conductor_server: ScriptedServer,
    tmp_path: Path,
) -> Path:
    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:3])
    path = tmp_path / "pool.toml"
    path.write_text(
        dump_pool(config) + f'[[models]]\nname = "boss"\nbase_url = "{conductor_server.base_url}"\n'
        'model = "boss"\n'
    )
    return path


@pytest.fixture(scope="module")
def question(replay_data: ReplayData) -> str:
    return load_replay_tasks(replay_data, datasets=["gsm8k"], limit=1).tasks[0].question


def test_conduct_prints_the_workflow_and_each_step(
    pool_file: Path, question: str, tmp_path: Path
) -> None:
    traces = f"sqlite:///{tmp_path / 't.db'}"
    result = cli(
        "conduct", "--pool", str(pool_file), "--conductor", "boss", question, "--traces", traces
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "model_id = [0, 1, 2]" in out
    for index in range(3):
        assert f"step {index} · " in out
    assert "sees all earlier" in out and "sees nothing" in out
    assert out.count("The answer is") == 4  # three steps and the final answer
    assert "4 call(s)" in result.stderr  # the conductor and three workers


def test_conduct_prints_an_inner_run_and_its_note_once(
    pool_file: Path, conductor_server: ScriptedServer, question: str, tmp_path: Path
) -> None:
    # Three workers, so the conductor is Model 3. The inner call writes the same workflow, which
    # asks for the conductor again past the depth cap: the previous answer passes through with
    # a note.
    recursive = 'model_id = [0, 3]\nsubtasks = ["a", "b"]\naccess_list = [[], "all"]'
    conductor_server.scripts["boss"] = lambda _messages: recursive
    result = cli(
        "conduct",
        "--pool",
        str(pool_file),
        "--conductor",
        "boss",
        "--recursion",
        question,
        "--traces",
        f"sqlite:///{tmp_path / 't.db'}",
    )
    assert result.returncode == 0, result.stderr
    assert "the conductor (recursion)" in result.stdout
    assert result.stdout.count("model 3 is out of range") == 1


def test_conduct_runs_a_given_workflow_file(pool_file: Path, question: str, tmp_path: Path) -> None:
    workflow = tmp_path / "wf.txt"
    workflow.write_text('model_id = [1, 0]\nsubtasks = ["a", "b"]\naccess_list = [[], [0]]')
    result = cli(
        "conduct",
        "--pool",
        str(pool_file),
        "--workers",
        "Mistral-7B-v0.1,MetaMath-Mistral-7B",
        "--workflow",
        f"@{workflow}",
        question,
        "--traces",
        f"sqlite:///{tmp_path / 't.db'}",
    )
    assert result.returncode == 0, result.stderr
    assert "step 0 · MetaMath-Mistral-7B" in result.stdout
    assert "step 1 · Mistral-7B-v0.1 · sees 0" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--workflow", "model_id = [0, 7]\nsubtasks = ['a', 'b']\naccess_list = [[], []]"],
            "workflow: step 1, model_id: model 7 is out of range",
        ),
        (
            ["--workflow", "model_id = [0]\nsubtasks = ['a']\naccess_list = [[1]]"],
            "step 0, access_list",
        ),
        (["--workflow", "@/nonexistent/wf.txt"], "No such file"),
        (["--conductor", "nobody"], "unknown model 'nobody'"),
        ([], "give either --conductor MODEL or --workflow"),
        (["--conductor", "boss", "--workers", "ghost"], "unknown model 'ghost'"),
        (["--conductor", "boss", "--answers", "numbers"], "--answers: expected one of number,"),
    ],
)
def test_conduct_bad_input_is_one_clear_line(
    pool_file: Path, question: str, tmp_path: Path, args: list[str], expected: str
) -> None:
    result = cli(
        "conduct",
        "--pool",
        str(pool_file),
        *args,
        question,
        "--traces",
        f"sqlite:///{tmp_path / 't.db'}",
    )
    one_line_error(result, expected)


def test_eval_runs_conductor_and_workflow_policies(
    pool_file: Path, replay_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    result = cli(
        "eval",
        "--pool",
        str(pool_file),
        "--tasks",
        f"replay:data={replay_dir}:datasets=mmlu:split=test:limit=10",
        "--policy",
        "conductor:boss",
        "--policy",
        "workflow:moa:models=Mistral-7B-v0.1,MetaMath-Mistral-7B,Chinese-Mistral-7B-v0.1",
        "--policy",
        "single:Mistral-7B-v0.1",
        "--json",
        str(out),
        "--traces",
        f"sqlite:///{tmp_path / 't.db'}",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    rows = report["policies"]
    assert rows["conductor:boss"]["calls"] == 10 * 4
    moa = "workflow:moa:models=Mistral-7B-v0.1,MetaMath-Mistral-7B,Chinese-Mistral-7B-v0.1"
    assert rows[moa]["calls"] == 10 * 3
    # MoA's aggregator is the first model: on replay it scores what that model scores.
    assert rows[moa]["per_dataset"] == rows["single:Mistral-7B-v0.1"]["per_dataset"]
    bad = cli(
        "eval",
        "--pool",
        str(pool_file),
        "--tasks",
        f"replay:data={replay_dir}:datasets=mmlu:limit=2",
        "--policy",
        "conductor:boss:depth=2",
        "--traces",
        f"sqlite:///{tmp_path / 't.db'}",
    )
    one_line_error(bad, "'depth=2' is not one of")


def test_a_workflow_that_fails_says_why_in_every_output(
    pool_file: Path, conductor_server: ScriptedServer, tmp_path: Path
) -> None:
    # A conductor that answers in prose, as SmolLM2 does untrained: every task fails, and each
    # output names the error's type and what was wrong (issue 30: "errors 10" and no reason).
    conductor_server.scripts["boss"] = lambda _messages: "The answer is 42."
    traces = f"sqlite:///{tmp_path / 't.db'}"
    spec = "replay:data={}:datasets=gsm8k:split=test:limit=2"
    run = cli(
        "eval",
        "--pool",
        str(pool_file),
        "--tasks",
        spec.format(data_dir()),
        "--policy",
        "conductor:boss",
        "--json",
        str(tmp_path / "e.json"),
        "--markdown",
        str(tmp_path / "e.md"),
        "--traces",
        traces,
    )
    assert run.returncode == 0, run.stderr
    why = "WorkflowSyntaxError: workflow: model_id: no `model_id = [...]` list found"
    entry = json.loads((tmp_path / "e.json").read_text())["policies"]["conductor:boss"]
    assert entry["errors"] == 2 and set(entry["failures"].values()) == {why}
    assert f"conductor:boss: 2 task(s) failed: {why}" in run.stdout
    assert why in (tmp_path / "e.md").read_text()
    shown = cli("traces", "show", "latest", "--traces", traces)
    assert shown.stdout.count(why) == 2, shown.stdout
    exported = cli("traces", "export", "latest", "--traces", traces).stdout.splitlines()
    calls = [json.loads(line) for line in exported]
    assert len(calls) == 2 and all(c["task_error"] == why and c["error"] is None for c in calls)


def test_conduct_reads_answers_as_the_given_kind_for_tool_steps(tmp_path: Path) -> None:
    """Two workers state 42 in different words: read as numbers they agree and `accept` ends the
    workflow before the third model; read as free text (the default) they do not."""
    replies = {"a": "6 * 7 = 42, so the result is \\boxed{42}.", "b": "The answer is 42."}
    replies["c"] = "The answer is 42."
    with scripted_server({n: (lambda _m, r=r: r) for n, r in replies.items()}) as server:
        path = tmp_path / "pool.toml"
        path.write_text(
            "".join(
                f'[[models]]\nname = "{n}"\nbase_url = "{server.base_url}"\nmodel = "{n}"\n'
                for n in replies
            )
        )
        flow = 'model_id = [0, 1, "accept", 2]\nsubtasks = ["a", "b", "", "c"]\n'
        flow += "access_list = [[], [], [0, 1], []]"
        runs = {
            kind: cli(
                *("conduct", "--pool", str(path), "--workflow", flow, "What is 6 * 7?"),
                *(("--answers", kind) if kind else ()),
                *("--traces", f"sqlite:///{tmp_path / 't.db'}"),
            )
            for kind in ("number", None)
        }
    for result in runs.values():
        assert result.returncode == 0, result.stderr
    assert "ended the workflow: 1 later step(s) not run" in runs["number"].stdout
    assert "2 call(s)" in runs["number"].stdout + runs["number"].stderr
    assert "ended the workflow" not in runs[None].stdout
    assert "3 call(s)" in runs[None].stdout + runs[None].stderr
    assert sorted(r["model"] for r in server.requests) == ["a", "a", "b", "b", "c"]
