"""An in-process Hugging Face causal LM behind the Agent protocol (needs the `coord` extra).

For a conductor trained with `consortium train conductor`, or any model on local disk. The model
loads on first use; generations run one at a time in a worker thread so the event loop keeps
serving the other agents.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from consortium.core.errors import AgentError, ConfigError
from consortium.core.quiet import quiet_transformers
from consortium.core.types import Completion, Message, Usage
from consortium.pool.config import ModelConfig


def prompt_text(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The chat template's text when the tokenizer has one, else `role: content` lines."""
    if getattr(tokenizer, "chat_template", None):
        text: str = tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=True
        )
        return text
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n\n".join([*lines, "assistant:"])


class LocalAgent:
    def __init__(self, config: ModelConfig) -> None:
        self.name = config.name
        self.config = config
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise ConfigError(
                f"model {self.name!r}: the local backend needs pip install 'consortium[coord]'"
            ) from None
        quiet_transformers()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.config.model)
            self._model = AutoModelForCausalLM.from_pretrained(self.config.model)
        except OSError as error:
            raise ConfigError(
                f"model {self.name!r}: cannot load {self.config.model}: {error}"
            ) from None
        self._model.eval()

    def _generate(self, messages: Sequence[Message], params: dict[str, Any]) -> Completion:
        import torch

        with self._lock:
            self._load()
            started = time.perf_counter()
            tokenizer = self._tokenizer
            encoded = tokenizer(
                prompt_text(tokenizer, messages), return_tensors="pt", add_special_tokens=False
            )
            # BERT-style tokenizers add token_type_ids, which causal LMs do not take.
            inputs = {
                key: encoded[key] for key in ("input_ids", "attention_mask") if key in encoded
            }
            temperature = float(params.get("temperature") or 0.0)
            seed = params.get("seed")
            if isinstance(seed, int):
                torch.manual_seed(seed)
            limit = int(params.get("max_tokens") or self.config.max_tokens)
            with torch.no_grad():
                output = self._model.generate(
                    **inputs,
                    max_new_tokens=limit,
                    do_sample=temperature > 0,
                    temperature=temperature if temperature > 0 else None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=tokenizer.pad_token_id,
                )
            new_tokens = output[0, inputs["input_ids"].shape[1] :]
            text = tokenizer.decode(new_tokens, skip_special_tokens=True)
            prompt_tokens = int(inputs["input_ids"].shape[1])
            return Completion(
                text,
                self.name,
                Usage(prompt_tokens, int(new_tokens.shape[0])),
                time.perf_counter() - started,
                "length" if new_tokens.shape[0] >= limit else "stop",
            )

    async def chat(self, messages: Sequence[Message], **params: Any) -> Completion:
        on_delta = params.pop("on_delta", None)  # generated whole: one delta at the end
        try:
            completion = await asyncio.wait_for(
                asyncio.to_thread(self._generate, messages, params), self.config.timeout
            )
        except TimeoutError:
            raise AgentError(
                self.name, f"no answer within {self.config.timeout:g}s", kind="timeout"
            ) from None
        except (RuntimeError, ValueError) as error:
            raise AgentError(
                self.name, f"generation failed: {error}", kind="generation failed"
            ) from None
        if on_delta is not None:
            on_delta(completion.text)
        return completion

    async def aclose(self) -> None:
        self._model = None
