"""The one train / test split of every records data set: a stated rule on the question id."""

from __future__ import annotations

import hashlib
from typing import Literal

from consortium.records.schema import Split

TEST_FRACTION = 0.5
RULE = (
    "test when int(sha256('<dataset>/<question_id>')[:8], 16) / 2**32 < test_fraction, else train"
)


def id_hash(text: str) -> int:
    """The first 32 bits of the sha256 of `text`: what the split (and the learning server's
    refit folds) draw from an id."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def split_of(
    dataset: str, question_id: str, test_fraction: float = TEST_FRACTION
) -> Literal["train", "test"]:
    """ "test" or "train" for a question, from its data set and id alone (the same in every
    command, every machine, every run)."""
    return "test" if id_hash(f"{dataset}/{question_id}") / 2**32 < test_fraction else "train"


def split_rule(test_fraction: float = TEST_FRACTION) -> Split:
    return Split(rule=RULE, test_fraction=test_fraction)
