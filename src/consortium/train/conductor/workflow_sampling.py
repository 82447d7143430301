"""Completions of a conductor model for prompt rows (`grpo.training_rows`): K sampled workflows
per prompt at a temperature, or one greedy, with transformers on whatever device is there."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers
from consortium.pool.local import prompt_text


@dataclass
class Sampler:
    """A loaded conductor model; `complete` writes completions for prompt rows."""

    model: Any
    tokenizer: Any

    @classmethod
    def load(cls, model_dir: str | Path) -> Sampler:
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise ConfigError(
                f"sampling workflows needs pip install 'consortium[coord]' ({error.name} missing)"
            ) from None
        quiet_transformers()
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(str(model_dir))
        model.eval()
        return cls(model, tokenizer)

    def complete(
        self,
        rows: Sequence[dict[str, Any]],
        *,
        samples: int = 1,
        temperature: float = 0.0,
        min_p: float = 0.0,
        max_new_tokens: int = 160,
        seed: int = 0,
        batch_size: int = 8,
        on_row: Callable[[int], None] | None = None,
    ) -> list[list[str]]:
        """`samples` completions per row (sampled when `temperature` > 0, else one greedy
        completion repeated), `batch_size` rows at a time, left-padded: on a CPU decoding reads
        every weight once per token, so a batch costs little more than one row. `min_p` > 0
        samples only tokens at least that share of the likeliest token's probability: a small
        conductor at temperature 1 otherwise derails its three lists on one unlikely token."""
        import torch

        torch.manual_seed(seed)
        found: list[list[str]] = []
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            texts = [
                r["prompt"]
                if isinstance(r["prompt"], str)
                else prompt_text(self.tokenizer, r["prompt"])
                for r in batch
            ]
            encoded = self.tokenizer(
                texts, return_tensors="pt", padding=True, add_special_tokens=False
            )
            sampling: dict[str, Any] = (
                {"do_sample": True, "temperature": temperature, "top_k": 0}
                | ({"min_p": min_p} if min_p > 0 else {})
                if temperature > 0
                else {"do_sample": False}
            )
            with torch.no_grad():
                output = self.model.generate(
                    input_ids=encoded["input_ids"],
                    attention_mask=encoded["attention_mask"],
                    max_new_tokens=max_new_tokens,
                    num_return_sequences=samples if temperature > 0 else 1,
                    pad_token_id=self.tokenizer.pad_token_id,
                    **sampling,
                )
            width = encoded["input_ids"].shape[1]
            decoded = [
                str(self.tokenizer.decode(tokens[width:], skip_special_tokens=True))
                for tokens in output
            ]
            if temperature > 0:  # each row's samples come out side by side
                found += [decoded[i : i + samples] for i in range(0, len(decoded), samples)]
            else:
                found += [[text] * samples for text in decoded]
            if on_row is not None:
                on_row(start + len(batch) - 1)
        return found
