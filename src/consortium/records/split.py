"""The one train / test split of every records data set: a stated rule on the question id."""

from __future__ import annotations

import hashlib
from typing import Literal

from consortium.records.schema import Split

TEST_FRACTION = 0.5
RULE = (
    "test when int(sha256('<dataset>/<question_id>')[:8], 16) / 2**32 < test_fraction, else train"
)


def split_of(
    dataset: str, question_id: str, test_fraction: float = TEST_FRACTION
) -> Literal["train", "test"]:
    """ "test" or "train" for a question, from its data set and id alone (the same in every
    command, every machine, every run)."""
    digest = hashlib.sha256(f"{dataset}/{question_id}".encode()).hexdigest()
    return "test" if int(digest[:8], 16) / 2**32 < test_fraction else "train"


def split_rule(test_fraction: float = TEST_FRACTION) -> Split:
    return Split(rule=RULE, test_fraction=test_fraction)
