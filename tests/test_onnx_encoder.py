"""The ONNX Runtime path of the default encoder gives the torch path's features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from consortium.coord.trinity.encoder import CachedEncoder, SentenceEncoder
from consortium.coord.trinity.onnx_encoder import OnnxSentenceEncoder, onnx_runtime_available
from consortium.coord.trinity.policy import BACKEND_VARIABLE, default_encoder, resolve_backend
from consortium.core.errors import ConfigError
from tests.helpers import required

required("onnxruntime")

TEXTS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many in May.",
    "short",
    "[Turn 1 · worker]\nThe answer is 72. " * 60,  # past the 256-token cut
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("encoders")


def test_float32_features_equal_torchs(exported: Path) -> None:
    fast = OnnxSentenceEncoder(cache_dir=exported)
    reference = SentenceEncoder().encode(TEXTS)
    together = fast.encode(TEXTS)  # one padded batch
    alone = np.concatenate([fast.encode([t]) for t in TEXTS])
    assert together.shape == (3, 384) and fast.model_path().exists()
    assert np.abs(together - reference).max() < 1e-4
    assert np.abs(alone - together).max() < 1e-4
    assert fast.encode([]).shape == (0, 384)


def test_int8_features_are_close_and_cached_under_their_own_name(
    exported: Path, tmp_path: Path
) -> None:
    int8 = OnnxSentenceEncoder(cache_dir=exported, quantize=True)
    reference = SentenceEncoder().encode(TEXTS)
    cosine = (int8.encode(TEXTS) * reference).sum(axis=1)
    assert cosine.min() > 0.9
    assert int8.cache_name != SentenceEncoder.name
    assert OnnxSentenceEncoder(cache_dir=exported).cache_name == SentenceEncoder.name
    CachedEncoder(int8, tmp_path / "f.db").encode(TEXTS[:1])
    other = CachedEncoder(OnnxSentenceEncoder(cache_dir=exported), tmp_path / "f.db")
    other.encode(TEXTS[:1])
    assert other.misses == 1  # the int8 row is not taken for a float32 feature


def test_the_environment_chooses_the_backend_for_auto_and_a_bad_value_is_refused() -> None:
    assert resolve_backend("auto", {BACKEND_VARIABLE: "torch"}) == "torch"
    assert resolve_backend("auto", {BACKEND_VARIABLE: "onnx-int8"}) == "onnx-int8"
    assert resolve_backend("onnx", {BACKEND_VARIABLE: "torch"}) == "onnx"  # asked for: kept
    expected = "onnx" if onnx_runtime_available() else "torch"
    assert resolve_backend("auto", {}) == expected
    with pytest.raises(ConfigError, match="choose one of auto, onnx, onnx-int8, torch"):
        resolve_backend("auto", {BACKEND_VARIABLE: "gpu"})


def test_default_encoder_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BACKEND_VARIABLE, "torch")
    cached = default_encoder(SentenceEncoder.name, tmp_path / "features.db")
    assert isinstance(cached.encoder, SentenceEncoder)
