"""A static-embedding encoder distilled from the pinned all-MiniLM-L6-v2: a decision in well
under a millisecond, at a small cost in what the feature sees.

model2vec (`model2vec.distill`) runs the pinned transformer once over every token of its
vocabulary (about 20 s on 2 cores, once per machine) and keeps one vector per token, weighted by
the token's frequency rank (SIF); a text's feature is the normalised mean of its tokens' vectors,
a table lookup with no forward pass. The distilled model is written under the cache
(`.consortium/encoders/`, keyed by the weights' sha256 and model2vec's version); later processes
load it without torch.

It is a different feature from `SentenceEncoder`'s (no attention between tokens: word order and
context are lost), so it has its own name and a policy trained on one cannot read the other's
features (`load_policy` refuses). On the RouterDC protocol a head trained on it scores as the
committed policy does (`scripts/encoder_parity.py`; docs/performance.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.trinity.defaults import STATIC_MINILM_NAME
from consortium.coord.trinity.encoder import minilm_cache_path, minilm_dir
from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers


def _model2vec_version() -> str:
    try:
        import model2vec
    except ImportError:
        raise ConfigError(
            f"the {STATIC_MINILM_NAME} encoder needs model2vec: pip install 'consortium[coord]'"
        ) from None
    return str(model2vec.__version__)


def distill_minilm(model_dir: Path, target: Path) -> Path:
    """Distil the transformer in `model_dir` into a static model at `target` (full 384 dims, no
    PCA); written to a temporary folder and renamed, so a concurrent or killed run leaves no half
    model. Needs torch and transformers; only this step does."""
    _model2vec_version()
    from model2vec.distill import distill

    target.parent.mkdir(parents=True, exist_ok=True)
    quiet_transformers()
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        written = Path(scratch) / "model"
        try:
            distill(model_name=str(model_dir), pca_dims=None, device="cpu").save_pretrained(
                str(written)
            )
        except Exception as error:  # model2vec and transformers raise their own errors
            raise ConfigError(f"cannot distil {STATIC_MINILM_NAME}: {error}") from None
        try:
            os.replace(written, target)
        except OSError:
            if not (target / "config.json").exists():
                raise
            shutil.rmtree(written)  # another process finished first; its model is the same
    return target


class StaticMiniLMEncoder:
    """all-MiniLM-L6-v2 distilled to static token vectors (model2vec): one lookup per text."""

    name = STATIC_MINILM_NAME
    dim = 384

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.cache_dir = cache_dir
        self._loading = threading.Lock()
        self._model: Any = None

    def model_path(self) -> Path:
        return minilm_cache_path(self.cache_dir, f"static-model2vec-{_model2vec_version()}")

    def _loaded(self) -> Any:
        with self._loading:
            if self._model is None:
                from model2vec import StaticModel

                path = self.model_path()
                if not (path / "config.json").exists():
                    distill_minilm(minilm_dir(), path)
                self._model = StaticModel.from_pretrained(str(path))
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        rows = self._loaded().encode(list(texts), show_progress_bar=False)
        return np.asarray(rows, dtype=np.float32)

    def token_sums(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's static token vectors, summed (n × 384, not normalised), with no length cut.
        A text's feature is its sum normalised, so features compose: the feature of texts joined
        together is the normalised sum of their sums (`encode` differs only past 512 tokens,
        where it cuts the text)."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        rows = self._loaded().encode_as_sequence(list(texts), show_progress_bar=False)
        return np.array([np.asarray(row, np.float32).sum(axis=0) for row in rows], np.float32)
