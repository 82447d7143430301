"""Reproducible draws: numbers hashed from what they depend on, the same in every process and run
(unlike `hash()`, which Python salts per process)."""

from __future__ import annotations

import hashlib


def uniform(*parts: object) -> float:
    """A uniform number in [0, 1) determined by `parts`."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64
