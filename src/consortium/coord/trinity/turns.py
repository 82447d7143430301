"""One TRINITY turn as the protocol records it: who acted, in which role, what it said, and the
feature the head read to choose it. Its own module so that `Outcome` can name it without
importing the protocol."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TurnRecord:
    index: int
    model: str
    role: str
    output: str
    verdict: str | None
    confidence: float
    model_index: int
    role_index: int
    feature: np.ndarray = field(repr=False)
