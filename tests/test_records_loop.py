"""Bring your own pool: record the real llama.cpp pool (SmolLM2-135M + Gemma 3 270M) on a small
task set, replay the recording, train a TRINITY head on its train split, evaluate on its test
split, and serve the trained policy, every step a real command against a real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import openai
import pytest

from consortium.pool.config import dump_pool
from consortium.records import load_records, split_of
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.runtime.launch import ChildServer
from consortium.smallmodels.llamacpp import LlamaCppServers
from tests.test_cli import cli as consortium_cli

pytestmark = [pytest.mark.real, pytest.mark.slow]

QUESTIONS = 12


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return consortium_cli(*args, env={"HF_HUB_OFFLINE": "1"}, timeout=600)


@pytest.fixture(scope="module")
def live(
    llama_servers: LlamaCppServers, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The recording of the session's real llama.cpp pool, and that pool's file."""
    root = tmp_path_factory.mktemp("loop")
    pool = llama_servers.write_pool(root / "local.toml")
    result = cli(
        "record", "--pool", str(pool), "--tasks", f"arithmetic:n={QUESTIONS}:seed=5",
        "--samples", "2", "--temperature", "0.8", "--out", str(root / "rec"),
        "--traces", f"sqlite:///{root / 'traces.db'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return root / "rec", pool


@pytest.fixture(scope="module")
def recorded(live: tuple[Path, Path]) -> Path:
    return live[0]


def test_record_replay_train_eval_serve(recorded: Path, tmp_path: Path) -> None:
    records = load_records(recorded)
    assert records.manifest.models == ["smollm2-135m", "gemma3-270m"]
    assert records.manifest.answer_kind == "number"
    rows = records.table.to_pylist()
    assert len(rows) == QUESTIONS * 2 * 2
    assert all(r["response"] is not None and r["error"] is None for r in rows)
    assert all(r["tokens_out"] > 0 and r["latency_s"] > 0 for r in rows)
    assert {r["correct"] for r in rows} <= {True, False}
    splits = {r["question_id"]: split_of("arithmetic", r["question_id"]) for r in rows}
    assert set(splits.values()) == {"train", "test"}

    with ReplayServerProcess(None, records=[recorded]) as server:
        replayed = load_records_replay([recorded])
        pool = tmp_path / "replay.toml"
        pool.write_text(dump_pool(replay_pool(replayed, server.base_url)))
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        first = next(r for r in rows if r["model"] == "gemma3-270m" and r["sample"] == 1)
        reply = client.chat.completions.create(
            model="gemma3-270m",
            messages=[{"role": "user", "content": first["question"]}],
            seed=1,
        )
        assert reply.choices[0].message.content == first["response"]  # the recorded text

        policy = tmp_path / "policy"
        traces = f"sqlite:///{tmp_path / 't.db'}"  # never the checkout's consortium-traces.db
        trained = cli(
            "train", "trinity", "--pool", str(pool), "--out", str(policy),
            "--tasks", f"records:path={recorded}:split=train", "--generations", "2",
            "--popsize", "4", "--minibatch", "4", "--components", "4", "--traces", traces,
        )  # fmt: skip
        assert trained.returncode == 0, trained.stderr[-2000:]
        assert (policy / "policy.json").exists()

        report = tmp_path / "eval.json"
        evaluated = cli(
            "eval", "--pool", str(pool), "--tasks", f"records:path={recorded}:split=test",
            "--policy", str(policy), "--json", str(report), "--traces", traces,
        )  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stderr[-2000:]
        assert report.stat().st_size > 0

        with ChildServer(
            "serve", "--pool", str(pool), "--policy", str(policy), "--traces", traces,
            ready_path="/v1/models", label="consortium serve", env={"HF_HUB_OFFLINE": "1"},
        ) as served:  # fmt: skip
            ensemble = openai.OpenAI(base_url=f"{served.root}/v1", api_key="none")
            test_row = next(r for r in rows if splits[r["question_id"]] == "test")
            answer = ensemble.chat.completions.create(
                model="consortium", messages=[{"role": "user", "content": test_row["question"]}]
            )
            text = answer.choices[0].message.content
            recorded_texts = {
                r["response"] for r in rows if r["question_id"] == test_row["question_id"]
            }
            assert text in recorded_texts  # the policy's pick answered with a recorded output


def test_a_scorer_cascade_trained_on_the_recording_serves_the_live_pool(
    live: tuple[Path, Path], tmp_path: Path
) -> None:
    """Your own pool end to end: the recording of the real llama.cpp pool -> a FrugalGPT scorer
    cascade trained on its train split -> `serve` over the live servers -> the openai SDK asks
    it -> the reply names who answered and why it stopped, and the trace holds each stage."""
    from consortium.runtime.store import TraceStore

    recorded_folder, pool = live
    team = tmp_path / "team"
    trained = cli(
        "train", "coordinator", "--kind", "scorer-cascade", "--records", str(recorded_folder),
        "--out", str(team),
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "scorer-cascade:arithmetic" in trained.stdout
    order = json.loads((team / "policy.json").read_text())["params"]["order"]
    assert sorted(order) == ["gemma3-270m", "smollm2-135m"]  # prices 0: every order ties
    rows = load_records(recorded_folder).table.to_pylist()
    question = next(
        r["question"] for r in rows if split_of("arithmetic", r["question_id"]) == "test"
    )
    traces = tmp_path / "t.db"
    with ChildServer(
        "serve", "--pool", str(pool), "--policy", str(team), "--traces", f"sqlite:///{traces}",
        ready_path="/v1/models", label="consortium serve", env={"HF_HUB_OFFLINE": "1"},
    ) as served:  # fmt: skip
        client = openai.OpenAI(base_url=f"{served.root}/v1", api_key="none")
        raw = client.chat.completions.with_raw_response.create(
            model="consortium", messages=[{"role": "user", "content": question}]
        )
        answer = raw.parse().choices[0].message.content
    assert answer  # a live model's own text
    answered = raw.headers["x-consortium-answered-by"]
    stop = raw.headers["x-consortium-stop"]
    assert answered in order and ("accepted at stage" in stop or "every stage asked" in stop)
    stages = int(raw.headers["x-consortium-calls"])
    store = TraceStore(f"sqlite:///{traces}")
    (run,) = store.list_runs()
    calls = list(store.iter_calls(run["run_id"]))
    store.close()
    assert [c["model"] for c in calls] == order[:stages]  # one call a stage, in the cascade's order
    assert any(c["response"] == answer for c in calls)
