"""Token estimates where no tokenizer is at hand: one token per 4 characters, at least 1.

Used for budget reservations before a call and by the replay server's declared usage.
"""

import math


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))
