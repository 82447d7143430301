"""The static encoder: distilled once from the pinned MiniLM, a lookup afterwards, its own name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from consortium.coord.trinity import static_encoder
from consortium.coord.trinity.defaults import STATIC_MINILM_NAME
from consortium.coord.trinity.encoder import CachedEncoder, SentenceEncoder
from consortium.coord.trinity.policy import load_policy
from consortium.coord.trinity.static_encoder import StaticMiniLMEncoder
from consortium.core.errors import ConfigError
from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.pool import replay_pool
from consortium.tasks.registry import load_task_set
from tests.helpers import required

required("model2vec")

TEXTS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many in May.",
    "Write a python function to find the first repeated character in a given string.",
    "Which of the following is the body cavity that contains the pituitary gland?",
]


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cache") / "encoders"  # where $CONSORTIUM_CACHE keeps it
    StaticMiniLMEncoder(cache_dir=folder).encode(TEXTS[:1])
    return folder


def test_features_are_unit_rows_that_keep_the_texts_apart(distilled: Path) -> None:
    features = StaticMiniLMEncoder(cache_dir=distilled).encode(TEXTS)
    assert features.shape == (3, 384) and features.dtype == np.float32
    assert np.allclose(np.linalg.norm(features, axis=1), 1.0, atol=1e-3)  # float16 table
    similarity = features @ features.T
    assert similarity[0, 1] < 0.9 and similarity[0, 2] < 0.9  # different questions differ
    # distilled from the contextual feature: each text's static row is nearer its own text's
    # contextual feature than any other text's (about 0.4 against 0.1 here), yet not equal to it
    cross = features @ SentenceEncoder().encode(TEXTS).T
    assert list(cross.argmax(axis=1)) == [0, 1, 2], cross
    assert np.diag(cross).max() < 0.99, cross
    assert StaticMiniLMEncoder(cache_dir=distilled).encode([]).shape == (0, 384)


def test_the_model_is_distilled_once_and_then_loaded(
    distilled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object) -> Path:
        raise AssertionError("distilled again although the model is in the cache")

    monkeypatch.setattr(static_encoder, "distill_minilm", refuse)
    again = StaticMiniLMEncoder(cache_dir=distilled)
    assert (again.model_path() / "config.json").exists()
    first = again.encode(TEXTS)
    assert np.array_equal(first, StaticMiniLMEncoder(cache_dir=distilled).encode(TEXTS))
    with pytest.raises(AssertionError, match="distilled again"):
        StaticMiniLMEncoder(cache_dir=distilled / "empty").encode(TEXTS[:1])


def test_train_router_by_default_on_the_static_encoder_then_load_and_decide_with_it(
    distilled: Path,
    replay_data: ReplayData,
    replay_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = tmp_path / "pool.toml"
    models = replay_data.models["split2"]
    pool.write_text(dump_pool(replay_pool(replay_data, "http://127.0.0.1:9/v1", models)))
    policy = tmp_path / "policy"
    spec = f"replay:data={replay_dir}:split=train:datasets=gsm8k,humaneval:limit=40"
    trained = subprocess.run(
        [
            sys.executable, "-m", "consortium", "train", "router", "--pool", str(pool),
            "--out", str(policy), "--tasks", spec,  # no --encoder: the static one is the default
            "--rollouts", "4000", "--minibatch", "50", "--popsize", "8",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "CONSORTIUM_CACHE": str(distilled.parent)},
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-3000:]
    meta = json.loads((policy / "policy.json").read_text())
    assert meta["encoder"] == STATIC_MINILM_NAME

    # loaded with no encoder given, the policy builds the static one its policy.json names (from
    # the distilled model the training run used), and its choices give the training reward
    monkeypatch.setenv("CONSORTIUM_CACHE", str(distilled.parent))
    coordinator = load_policy(policy)
    assert coordinator.encoder.name == STATIC_MINILM_NAME
    recorded = dict(zip(coordinator.models, models, strict=True))
    tasks = load_task_set(spec).tasks
    chosen = [coordinator.models[coordinator.head.choose(coordinator.feature(t.question))[0]]
              for t in tasks]  # fmt: skip
    rewards = [t.meta["p_correct"][recorded[m]] for t, m in zip(tasks, chosen, strict=True)]
    assert np.isclose(np.mean(rewards), meta["train_reward"], atol=1e-6)
    with pytest.raises(ConfigError, match=f"trained on {STATIC_MINILM_NAME} features, not all-"):
        load_policy(policy, CachedEncoder(NamedContextual()))


class NamedContextual:
    """Named like the contextual MiniLM; never asked to encode (the policy refuses it first)."""

    name = SentenceEncoder.name
    dim = 384

    def encode(self, texts: object) -> np.ndarray:
        raise AssertionError("encoded with the wrong encoder")


def test_token_sums_compose_into_the_feature_of_the_joined_text(distilled: Path) -> None:
    encoder = StaticMiniLMEncoder(cache_dir=distilled)
    sums = encoder.token_sums([TEXTS[0], "The answer is 72."])
    assert sums.shape == (2, 384)
    joined = encoder.encode([TEXTS[0] + " The answer is 72."])[0]
    composed = sums.sum(axis=0) / np.linalg.norm(sums.sum(axis=0))
    assert float(joined @ composed) > 0.999  # the transcript feature is a sum of its parts
    alone = sums[0] / np.linalg.norm(sums[0])
    assert float(joined @ alone) < float(joined @ composed) - 0.005  # the answer moved it
    assert encoder.token_sums([]).shape == (0, 384)
