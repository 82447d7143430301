"""The pool name a recorded model is served under by a replay server."""

from __future__ import annotations


def short_name(model: str) -> str:
    """`meta-llama/Meta-Llama-3-8B` -> `Meta-Llama-3-8B`: the pool name of a recorded model."""
    return model.rsplit("/", 1)[-1]
