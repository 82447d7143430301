"""What one TRINITY report run takes: the replay data, where it writes, the committed policy's
training settings and the comparison's sample sizes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MINILM = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class TrinityReportRequest:
    """`script`: the "Made by" command the report prints; `cli`: how to run `consortium` (the
    served run trains and evaluates through it)."""

    data: str
    script: str
    cli: tuple[str, ...] = ()
    out: str = "reports"
    policy: str = "policies/trinity-replay"
    encoder: str = MINILM
    rollouts: int = 2_000_000
    test_limit: int = 0
    seed: int = 0
    compare_test_limit: int = 150
    compare_train_limit: int = 400
    seeds: int = 3


@dataclass(frozen=True)
class TrinityReport:
    """What a run writes: OUT/STEM.md and OUT/STEM.json."""

    stem: str
    markdown: str
    data: dict[str, Any]
