"""A trained TRINITY policy on disk: head.npy, standardizer.npz and policy.json."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from consortium.coord.trinity.defaults import ENCODER, STATIC_MINILM_NAME
from consortium.coord.trinity.encoder import (
    SMOLLM2_NAME,
    CachedEncoder,
    CausalLMEncoder,
    Encoder,
    SentenceEncoder,
    StandardizedEncoder,
    Standardizer,
    smollm2_encoder,
)
from consortium.coord.trinity.head import ROLES, LinearHead
from consortium.coord.trinity.onnx_encoder import OnnxSentenceEncoder, onnx_runtime_available
from consortium.coord.trinity.protocol import TrinityCoordinator
from consortium.coord.trinity.static_encoder import StaticMiniLMEncoder
from consortium.core.errors import ConfigError


@dataclass
class HeadSetup:
    """Everything but the weights: the encoder, the pool's models, the protocol's settings."""

    encoder: StandardizedEncoder
    models: list[str]
    max_turns: int = 1
    roles: tuple[str, ...] = ("worker",)

    @property
    def n_params(self) -> int:
        return (len(self.models) + len(ROLES)) * self.encoder.dim

    def head(self, vector: np.ndarray) -> LinearHead:
        return LinearHead.from_vector(vector, len(self.models), self.encoder.dim)

    def coordinator(
        self, vector: np.ndarray, sample_seed: int | None, name: str = "trinity"
    ) -> TrinityCoordinator:
        return TrinityCoordinator(
            self.head(vector),
            self.encoder,
            self.models,
            max_turns=self.max_turns,
            roles=self.roles,
            sample_seed=sample_seed,
            name=name,
        )


EncoderBackend = Literal["auto", "onnx", "onnx-int8", "torch"]
BACKENDS: tuple[EncoderBackend, ...] = ("auto", "onnx", "onnx-int8", "torch")
BACKEND_VARIABLE = "CONSORTIUM_ENCODER_BACKEND"
"""Read when a caller asks for "auto": how a deployment picks the backend for every command
(torch is faster for one decision at a time on an idle machine; docs/performance.md)."""


def resolve_backend(backend: EncoderBackend, environ: Mapping[str, str]) -> EncoderBackend:
    """The backend asked for; for "auto", $CONSORTIUM_ENCODER_BACKEND if set, else onnx when
    onnxruntime is installed, else torch. An unknown value is a ConfigError naming the choices."""
    if backend != "auto":
        return backend
    chosen = environ.get(BACKEND_VARIABLE, "auto")
    if chosen not in BACKENDS:
        raise ConfigError(f"{BACKEND_VARIABLE}={chosen!r}: choose one of {', '.join(BACKENDS)}")
    if chosen != "auto":
        return chosen
    return "onnx" if onnx_runtime_available() else "torch"


def default_encoder(
    name: str = ENCODER, cache: Path | None = None, backend: EncoderBackend = "auto"
) -> CachedEncoder:
    """all-MiniLM-L6-v2-static by default (`defaults.ENCODER`, what a new training uses: the
    model2vec distillation of all-MiniLM-L6-v2, a lookup, no forward pass); all-MiniLM-L6-v2
    (contextual); SmolLM2-135M-Instruct from its pinned PyPI package; any other name is a causal
    LM (path or hub id).

    all-MiniLM-L6-v2 runs on ONNX Runtime (`backend="onnx"`; "auto" picks it when onnxruntime is
    installed) or on torch (`"torch"`), both float32 and the same features; `"onnx-int8"` is
    faster with int8 products and slightly different features (docs/performance.md).
    $CONSORTIUM_ENCODER_BACKEND chooses for "auto" (`resolve_backend`)."""
    encoder: Encoder
    if name == SentenceEncoder.name:
        chosen = resolve_backend(backend, os.environ)
        encoder = (
            SentenceEncoder()
            if chosen == "torch"
            else OnnxSentenceEncoder(quantize=chosen == "onnx-int8")
        )
    elif name == STATIC_MINILM_NAME:
        encoder = StaticMiniLMEncoder()
    elif name == SMOLLM2_NAME:
        encoder = smollm2_encoder()
    else:
        encoder = CausalLMEncoder.from_pretrained(name)
    return CachedEncoder(encoder, cache)


def save_policy(out_dir: Path, vector: np.ndarray, setup: HeadSetup, meta: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    head = setup.head(vector)
    np.save(out_dir / "head.npy", head.weights)
    standardizer = setup.encoder.standardizer
    basis = standardizer.basis if standardizer.basis is not None else np.zeros((0, 0))
    np.savez(
        out_dir / "standardizer.npz",
        mean=standardizer.mean,
        scale=standardizer.scale,
        basis=basis,
        constant=np.array(standardizer.constant),
    )
    (out_dir / "policy.json").write_text(
        json.dumps(
            {
                "kind": "trinity",
                "encoder": setup.encoder.name,
                "models": setup.models,
                "max_turns": setup.max_turns,
                "roles": list(setup.roles),
                "n_params": head.n_params,
                **meta,
            },
            indent=2,
        )
    )


def load_policy(
    policy_dir: Path, encoder: CachedEncoder | None = None, name: str | None = None
) -> TrinityCoordinator:
    """The coordinator of a trained policy, greedy (argmax) as at evaluation."""
    meta_path = policy_dir / "policy.json"
    if not meta_path.exists():
        raise ConfigError(f"{policy_dir} is not a trained policy (no policy.json)")
    meta = json.loads(meta_path.read_text())
    if meta.get("kind") != "trinity":
        raise ConfigError(f"{policy_dir}: unknown policy kind {meta.get('kind')!r}")
    encoder = encoder or default_encoder(meta["encoder"], policy_dir / "features.db")
    if encoder.name != meta["encoder"]:
        raise ConfigError(
            f"{policy_dir} was trained on {meta['encoder']} features, not {encoder.name}"
        )
    stats = np.load(policy_dir / "standardizer.npz")
    models: list[str] = meta["models"]
    head = LinearHead(np.load(policy_dir / "head.npy"), len(models))
    return TrinityCoordinator(
        head,
        StandardizedEncoder(
            encoder,
            Standardizer(
                stats["mean"],
                stats["scale"],
                stats["basis"] if stats["basis"].size else None,
                bool(stats["constant"]) if "constant" in stats else False,
            ),
        ),
        models,
        max_turns=int(meta["max_turns"]),
        roles=tuple(meta["roles"]),
        name=name or f"trinity:{policy_dir.name}",
    )


def load_setup(
    policy_dir: Path, encoder: CachedEncoder | None = None
) -> tuple[HeadSetup, np.ndarray]:
    """A trained policy as (setup, weight vector): what a warm-started retraining starts from."""
    coordinator = load_policy(policy_dir, encoder)
    assert isinstance(coordinator.encoder, StandardizedEncoder)
    setup = HeadSetup(
        coordinator.encoder, coordinator.models, coordinator.max_turns, coordinator.roles
    )
    return setup, coordinator.head.to_vector()
