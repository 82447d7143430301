"""Real language models in the loop: SmolLM2-135M-Instruct and Gemma 3 270M (pinned PyPI packages,
sha256-checked GGUF files) behind llama.cpp's own OpenAI-compatible server.

The models are weak; these tests assert behaviour (what each step saw, what was traced, what was
billed), never accuracy. Skip them locally with `pytest -m 'not real'`; `make test` and CI run them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import WorkflowCoordinator, template
from consortium.coord.conductor.workflow import Workflow
from consortium.coord.trinity.head import ROLES, LinearHead
from consortium.coord.trinity.protocol import TrinityCoordinator
from consortium.core.answers import find_verdict
from consortium.core.errors import AgentError, ConfigError, ConsortiumError
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.pool.config import PoolConfig, load_pool, parse_pool
from consortium.runtime.caller import Caller
from consortium.runtime.launch import ChildServer
from consortium.runtime.store import TraceStore
from consortium.smallmodels.files import GEMMA3, SMOLLM2, locate
from consortium.smallmodels.llamacpp import LlamaCppServers, parse_models
from consortium.tasks.base import Task
from consortium.tasks.math import MathGrader
from tests.helpers import LIVE_SETTINGS as SETTINGS
from tests.scripted_server import scripted_server

pytestmark = [pytest.mark.real, pytest.mark.slow]

QUESTIONS = ["What is 7 + 5?", "What is 9 - 4?", "What is 3 * 6?", "What is 8 + 8?"]
ANSWERS = ["12", "5", "18", "16"]


def tasks(n: int = 1) -> list[Task]:
    return [Task(f"arith-{i}", QUESTIONS[i], "arithmetic", "test", ANSWERS[i]) for i in range(n)]


@pytest.fixture
def servers(llama_servers: LlamaCppServers) -> LlamaCppServers:
    """The session's llama.cpp pool (tests/conftest.py)."""
    return llama_servers


@pytest.fixture
def caller(servers: LlamaCppServers, tmp_path: Path) -> Iterator[tuple[Caller, TraceStore]]:
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    yield Caller(Pool(servers.pool()), store, store.start_run("real")), store
    store.close()


def test_pinned_files_and_the_pool_file(servers: LlamaCppServers, tmp_path: Path) -> None:
    assert [s.name for s in servers.running()] == [SMOLLM2.name, GEMMA3.name]
    written = servers.write_pool(tmp_path / "local.toml")
    text = written.read_text()
    assert "Prices are 0" in text
    pool = load_pool(written)
    assert pool.names == [SMOLLM2.name, GEMMA3.name]
    assert all(m.price_in == m.price_out == 0 and m.base_url for m in pool.models)
    assert all(str(m.base_url).startswith("http://127.0.0.1:") for m in pool.models)
    # Gemma is assembled once into the cache and reused from there, not copied into each state.
    gemma = locate(GEMMA3)
    assert gemma.stat().st_size > 200_000_000
    assert locate(GEMMA3).stat().st_mtime_ns == gemma.stat().st_mtime_ns
    assert not (servers.state_dir / "models").exists()
    with pytest.raises(ConfigError, match="unknown local model nope"):
        parse_models("smollm2-135m,nope")


async def test_chat_stream_and_usage(
    servers: LlamaCppServers, caller: tuple[Caller, TraceStore]
) -> None:
    run, store = caller
    agent = run.pool.agent(SMOLLM2.name)
    question = [{"role": "user", "content": "Name three colours."}]
    plain = await agent.chat(question, max_tokens=12, temperature=0)
    assert plain.text and plain.model == SMOLLM2.name
    assert plain.usage.prompt_tokens > 5 and 0 < plain.usage.completion_tokens <= 12
    assert not plain.usage.estimated and plain.finish_reason in ("stop", "length")

    pieces: list[str] = []
    streamed = await agent.chat(question, max_tokens=12, temperature=0, on_delta=pieces.append)
    assert len(pieces) > 1 and "".join(pieces) == streamed.text
    # llama.cpp sends no usage chunk when streaming: the count is the streamed tokens, flagged.
    assert streamed.usage.estimated and streamed.usage.completion_tokens == len(pieces)
    assert streamed.finish_reason in ("stop", "length")

    # Through the caller: traced with the reported usage, billed at the declared price of 0.
    task_caller = run.for_task("t1", "single")
    completion = await task_caller.call(GEMMA3.name, question, max_tokens=8)
    (row,) = list(store.iter_calls(run.run_id))
    assert row["model"] == GEMMA3.name and row["response"] == completion.text
    assert row["prompt_tokens"] == completion.usage.prompt_tokens > 0
    assert row["completion_tokens"] == completion.usage.completion_tokens <= 8
    assert row["cost"] == 0.0 and task_caller.budget.calls == 1


async def test_concurrent_calls_queue_at_the_client_and_a_short_timeout_fails_clearly(
    servers: LlamaCppServers,
) -> None:
    pool = Pool(servers.pool())
    agent = pool.agent(SMOLLM2.name)
    stamps: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def mark(i: int) -> Any:
        return lambda _text: stamps[i].append(time.perf_counter())

    messages = [{"role": "user", "content": "Count from one to ten."}]
    await asyncio.gather(*(agent.chat(messages, max_tokens=10, on_delta=mark(i)) for i in range(3)))
    # max_concurrency = 1: one stream finishes before the next begins, in order.
    spans = sorted((min(v), max(v)) for v in stamps.values())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))

    (entry,) = [m for m in servers.pool().models if m.name == SMOLLM2.name]
    hurried = entry.model_copy(update={"timeout": 0.05, "max_retries": 0})
    fast = Pool(PoolConfig(models=[hurried]))
    with pytest.raises(AgentError, match=r"timed out after 0\.05s"):
        await fast.agent(SMOLLM2.name).chat(messages, max_tokens=64)
    await pool.aclose()
    await fast.aclose()


async def test_a_server_killed_mid_run_gives_clear_errors_and_loses_no_result(
    tmp_path: Path,
) -> None:
    with LlamaCppServers(tmp_path / "own", [SMOLLM2], SETTINGS) as own:
        (server,) = own.running()
        store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
        run = Caller(Pool(own.pool()), store, store.start_run("kill"))
        coordinator = WorkflowCoordinator(template("single", [SMOLLM2.name]), "single")

        def kill_after_first(_result: Any) -> None:
            if _alive(server.pid):
                os.kill(server.pid, signal.SIGKILL)

        results = await run_policy(
            coordinator,
            tasks(4),
            MathGrader(),
            run,
            concurrency=1,
            on_done=kill_after_first,
        )
    first, *rest = results
    assert first.error is None and first.answer
    assert all(r.error and f"cannot reach {server.base_url}" in r.error for r in rest)
    stored = {r["task_id"]: r for r in store.iter_results(run.run_id)}
    assert sorted(stored) == [t.id for t in tasks(4)]
    assert stored["arith-0"]["answer"] == first.answer
    calls = list(store.iter_calls(run.run_id))
    assert [c["error"] is None for c in calls] == [True, False, False, False]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class TurnEncoder:
    """Routes by turn number, so the test chooses who speaks in which role. The number is counted,
    not read from the transcript: real models echo the "[Turn i · role]" markers they are shown."""

    name = "turn-count"
    dim = 6

    def __init__(self) -> None:
        self.turn = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            self.turn = self.turn + 1 if "[Turn " in text else 0  # a new task has no turns
            rows[i, min(self.turn, self.dim - 1)] = 1.0
        return rows


async def test_trinity_roles_on_real_models(caller: tuple[Caller, TraceStore]) -> None:
    run, store = caller
    models = [SMOLLM2.name, GEMMA3.name]
    # Turn 1: SmolLM2 thinks; turn 2: Gemma works; turn 3: SmolLM2 verifies; turn 4: SmolLM2
    # works again; turn 5: Gemma verifies.
    plan = [(0, "thinker"), (1, "worker"), (0, "verifier"), (0, "worker"), (1, "verifier")]
    head = LinearHead.zeros(len(models), TurnEncoder.dim)
    for turn, (model, role) in enumerate(plan):
        head.weights[model, turn] = 5.0
        head.weights[len(models) + ROLES.index(role), turn] = 5.0
    coordinator = TrinityCoordinator(head, TurnEncoder(), models, max_turns=5)
    outcomes = []
    for task in tasks(2):
        outcomes.append(await coordinator.run(task, run.for_task(task.id, "trinity")))
    verdicts: list[str | None] = []
    for task, outcome in zip(tasks(2), outcomes, strict=True):
        calls = [c for c in store.iter_calls(run.run_id) if c["task_id"] == task.id]
        spoken = [(c["model"], c["role"]) for c in calls]
        assert spoken == [(models[m], r) for m, r in plan][: len(calls)]
        assert len(calls) >= 3  # the first verdict comes at turn 3
        thinker, worker, verifier = calls[:3]
        worker_prompt = "\n".join(m["content"] for m in json.loads(worker["messages"]))
        assert thinker["response"].strip() and thinker["response"] in worker_prompt
        verifier_prompt = "\n".join(m["content"] for m in json.loads(verifier["messages"]))
        assert worker["response"] in verifier_prompt and task.question in verifier_prompt
        for call in calls:
            if call["role"] == "verifier":
                assert call["verdict"] in ("ACCEPT", "REVISE")
                verdicts.append(find_verdict(call["response"]))
        stop = next((i for i, c in enumerate(calls) if c["verdict"] == "ACCEPT"), None)
        assert (stop is None and len(calls) == 5) or stop == len(calls) - 1
        workers = [c for c in calls if c["role"] == "worker"]
        assert outcome.answer == workers[-1]["response"]
    parsed = sum(v is not None for v in verdicts)
    print(f"verifier verdicts parsed: {parsed}/{len(verdicts)}")


def _visible_outputs(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "assistant"]


def _check_access(workflow: Workflow, calls: list[dict[str, Any]]) -> None:
    """Each step's traced prompt holds exactly the outputs its access list names, in order."""
    by_turn = {c["turn"]: c for c in calls}
    assert sorted(by_turn) == [s.index + 1 for s in workflow.steps]
    for step in workflow.steps:
        call = by_turn[step.index + 1]
        assert call["model"] == step.model
        seen = _visible_outputs(json.loads(call["messages"]))
        assert seen == [by_turn[j + 1]["response"] for j in step.visible]


@pytest.mark.parametrize("kind", ["judge-vote", "moa", "debate", "reflect"])
async def test_workflow_templates_on_real_models(
    kind: str, caller: tuple[Caller, TraceStore]
) -> None:
    run, store = caller
    workflow = template(kind, [SMOLLM2.name, GEMMA3.name])
    (result,) = await run_policy(
        WorkflowCoordinator(workflow, f"workflow:{kind}"), tasks(1), MathGrader(), run
    )
    calls = list(store.iter_calls(run.run_id))
    assert result.error is None and result.calls == len(workflow.steps) == len(calls)
    _check_access(workflow, calls)
    last = next(c for c in calls if c["turn"] == len(calls))["response"]
    if kind == "judge-vote":
        # The judge picks; the answer is a voter's own text, never the judge's reply.
        voters = [c["response"] for c in calls if c["turn"] < len(calls)]
        assert result.answer in voters
        assert result.outcome is not None and result.outcome.notes
    else:
        assert result.answer == last
    assert result.tokens == sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)


async def test_conductor_workflow_run_by_real_workers(
    servers: LlamaCppServers, tmp_path: Path
) -> None:
    plan = (
        "<think>one computes, the other checks</think>\n"
        "model_id = [0, 1, 0]\n"
        "subtasks = ['Compute the result.', 'Check the computation above.', "
        "'Give the final result.']\n"
        "access_list = [[], [0], 'all']"
    )
    with scripted_server({"boss": lambda _messages: plan}) as boss:
        entries = [m.model_dump(mode="json", exclude_none=True) for m in servers.pool().models]
        entries.append({"name": "boss", "base_url": boss.base_url, "model": "boss"})
        store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
        run = Caller(Pool(parse_pool({"models": entries})), store, store.start_run("conductor"))
        conductor = ConductorCoordinator("boss", [SMOLLM2.name, GEMMA3.name])
        (task,) = tasks(1)
        outcome = await conductor.run(task, run.for_task(task.id, "conductor"))
    workflow_run = outcome.workflow
    calls = list(store.iter_calls(run.run_id))
    assert [c["role"] for c in calls].count("conductor") == 1
    workers = [c for c in calls if c["role"] == "worker"]
    assert [c["model"] for c in workers] == [SMOLLM2.name, GEMMA3.name, SMOLLM2.name]
    _check_access(workflow_run.workflow, workers)
    assert outcome.answer == workers[-1]["response"]


VOTE = (
    'model_id = [0, 1, "vote"]\nsubtasks = ["Solve it.", "Solve it.", ""]\n'
    'access_list = [[], [], "all"]'
)


@pytest.mark.e2e
def test_a_fine_tuned_conductor_writes_a_vote_step_that_runs_live(
    servers: LlamaCppServers, tmp_path: Path
) -> None:
    """The warm start's fine-tuning (`workflow_sft.fine_tune`) teaches SmolLM2 one workflow with a
    tool step, on two questions; `consortium ask --policy conductor:…` on a third: the trained
    conductor writes the workflow, both llama.cpp models answer, and the vote returns one of
    their texts."""
    import subprocess
    import sys

    from consortium.coord.conductor.prompt import conductor_messages
    from consortium.pool.local import prompt_text
    from consortium.train.conductor.base_models import load_tokenizer, resolve_base
    from consortium.train.conductor.workflow_sft import WarmStartSettings, fine_tune

    workers = [SMOLLM2.name, GEMMA3.name]
    base = resolve_base(SMOLLM2.name, tmp_path, 0)
    tokenizer = load_tokenizer(base)
    prompts = [
        prompt_text(tokenizer, conductor_messages(q, workers, {}, examples=False))
        for q in QUESTIONS[:2]
    ]
    examples = [{"prompt": prompts[i % 2], "completion": " " + VOTE} for i in range(8)]
    folder = fine_tune(
        base,
        examples,
        tmp_path / "conductor",
        WarmStartSettings(steps=8, batch_size=1, learning_rate=3e-4),
    )
    pool_file = servers.write_pool(tmp_path / "pool.toml")
    # on two cores shared with the suite's other worker, the in-process 135M conductor may take
    # more than the default minute to write its workflow: what is tested is what it writes
    with pool_file.open("a") as handle:
        handle.write(
            f'\n[[models]]\nname = "conductor"\nbackend = "local"\nmodel = "{folder}"\n'
            "timeout = 300\n"
        )
    traces = f"sqlite:///{tmp_path / 'traces.db'}"
    spec = f"conductor:conductor:workers={','.join(workers)}:examples=0"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "consortium", "ask", QUESTIONS[2]),
            *("--pool", str(pool_file), "--policy", spec, "--traces", traces),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "3 call(s)" in done.stderr  # the conductor and the two models; the vote calls none
    store = TraceStore(traces)
    rows = store.task_calls(store.list_runs()[0]["run_id"], "ask")
    store.close()
    assert sorted(r["role"] for r in rows) == ["conductor", "tool", "worker", "worker"]
    conductor = next(r for r in rows if r["role"] == "conductor")
    assert conductor["response"].strip() == VOTE
    answers = [r["response"].strip() for r in rows if r["role"] == "worker"]
    assert sorted(r["model"] for r in rows if r["role"] == "worker") == sorted(workers)
    assert done.stdout.strip() in answers


def test_serve_in_front_of_the_real_pool(servers: LlamaCppServers, tmp_path: Path) -> None:
    pool_file = servers.write_pool(tmp_path / "local.toml")
    with ChildServer(
        "serve",
        "--pool",
        str(pool_file),
        "--policy",
        "workflow:judge-vote",
        "--traces",
        f"sqlite:///{tmp_path / 'serve.db'}",
        ready_path="/health",
        label="serve",
    ) as served:
        client = openai.OpenAI(base_url=f"{served.root}/v1", api_key="unused")
        answer = client.chat.completions.with_raw_response.create(
            model="consortium", messages=[{"role": "user", "content": QUESTIONS[0]}]
        )
        completion = answer.parse()
        assert completion.choices[0].message.content
        assert answer.headers["x-consortium-calls"] == "3"
        assert completion.usage is not None and completion.usage.total_tokens > 0
        chunks = list(
            client.chat.completions.create(
                model="consortium",
                messages=[{"role": "user", "content": QUESTIONS[1]}],
                stream=True,
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text.strip()
    store = TraceStore(f"sqlite:///{tmp_path / 'serve.db'}")
    calls = [c for r in store.list_runs() for c in store.iter_calls(r["run_id"])]
    assert sorted(c["model"] for c in calls) == sorted(
        [SMOLLM2.name, GEMMA3.name, SMOLLM2.name] * 2
    )
    # The vote returns a voter's own text (turns 1 and 2), not the judge's reply (turn 3).
    first = [c for c in calls if c["task_id"] == answer.headers["x-consortium-task"]]
    voters = [c["response"] for c in first if c["turn"] < 3]
    assert completion.choices[0].message.content in voters


def test_cli_start_status_stop(tmp_path: Path) -> None:
    import subprocess
    import sys

    state = tmp_path / "state"
    pool = tmp_path / "p.toml"
    base = [sys.executable, "-m", "consortium", "local"]
    started = subprocess.run(
        [*base, "start", "--models", "smollm2-135m", "--pool", str(pool), "--state", str(state)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert started.returncode == 0, started.stderr
    try:
        assert load_pool(pool).names == [SMOLLM2.name]
        again = subprocess.run(
            [*base, "start", "--pool", str(pool), "--state", str(state)],
            capture_output=True,
            text=True,
        )
        assert again.returncode == 1 and "already running" in again.stderr
        status = subprocess.run([*base, "status", "--state", str(state)], capture_output=True)
        assert SMOLLM2.name.encode() in status.stdout
    finally:
        stopped = subprocess.run(
            [*base, "stop", "--state", str(state)], capture_output=True, text=True
        )
    assert "stopped: smollm2-135m" in stopped.stdout
    with pytest.raises(ConsortiumError, match=r"no llama\.cpp servers"):
        LlamaCppServers(state).pool()
