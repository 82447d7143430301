"""What a replayed model answers: a seeded, reproducible draw from its recorded outcome.

For a split2 record the answer is right when ``u < p``, where ``p`` is the model's recorded
probability and ``u`` a uniform number hashed from (server seed, question, sample). With the default
``coupling="shared"`` every model sees the same ``u`` for a question and sample, so a model with a
higher recorded probability is right whenever a weaker one is; the per-question-best oracle then
equals the mean over questions of the best recorded probability, as the data's README defines it.
``coupling="independent"`` hashes the model in too. The sample index is the request's ``seed``
parameter (0 when absent): repeating a request repeats its answer, a new seed draws a new sample.

The recorded data hold no reference answers for split2 questions, so a right answer is written as
"The answer is <reference token>" and a wrong one with a token unique to (model, sample): a declared
stand-in for the answer text, graded by `consortium.replay.tasks.ReplayGrader`.

A record from a records folder (consortium.records) answers with its k-th recorded sample, k the
sample index; past the last recorded sample it raises `SamplesExhausted`, never reuses one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from consortium.core.answers import ANSWER_PREFIX
from consortium.core.draws import uniform
from consortium.records.errors import SamplesExhausted
from consortium.replay.data import ReplayRecord, reference_token

Coupling = Literal["shared", "independent"]
ANSWER_TOKEN = r"[RW][0-9a-f]{10}"
"""What a replayed answer states instead of answer text: R + hex for right, W + hex for wrong."""


@dataclass(frozen=True, slots=True)
class ReplayAnswer:
    text: str
    correct: bool


def replay_answer(
    record: ReplayRecord,
    model: str,
    *,
    sample: int = 0,
    seed: int = 0,
    coupling: Coupling = "shared",
) -> ReplayAnswer:
    p = record.p_correct[model]
    if record.samples is not None:
        recorded = record.samples[model]
        if not 0 <= sample < len(recorded):
            raise SamplesExhausted(model, record.question_id or record.id, sample, len(recorded))
        return ReplayAnswer(recorded[sample].text, recorded[sample].correct)
    if record.responses is not None:
        return ReplayAnswer(record.responses[model], p >= 1.0)
    key = (seed, record.question) if coupling == "shared" else (seed, record.question, model)
    correct = uniform(*key, sample) < p
    if correct:
        token = reference_token(record.question)
    else:
        token = (
            "W"
            + hashlib.blake2b(
                f"{record.question}\x1f{model}\x1f{sample}".encode(), digest_size=5
            ).hexdigest()
        )
    return ReplayAnswer(f"(replay of {model}) {ANSWER_PREFIX}{token}.", correct)
