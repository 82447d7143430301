"""What `make real` takes (sample sizes, seed) and what it measures per task set and policy."""

from __future__ import annotations

import math
from dataclasses import dataclass

POOL_NAME = "llama.cpp server, SmolLM2-135M-Instruct (Q4_1) + Gemma 3 270M (Q4_K_M), 1 thread each"


@dataclass(frozen=True)
class RealLmsRequest:
    """`script`: the "Made by" command the report prints."""

    benchmarks: str
    script: str
    out: str = "reports"
    arithmetic: int = 24
    gsm8k: int = 8
    humaneval: int = 4
    max_tokens: int = 128
    seed: int = 0


@dataclass
class Row:
    tasks: str
    policy: str
    n: int
    correct: int
    calls: int
    tokens: int
    errors: int
    wall_s: float
    note: str = ""

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def interval(self) -> tuple[float, float]:
        """Wilson 95 % interval of the accuracy."""
        if not self.n:
            return 0.0, 0.0
        z, p, n = 1.96, self.accuracy, self.n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)
