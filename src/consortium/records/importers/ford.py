"""A FORD run (`ford_files`) as records rows: per question, each seat's reply to the question alone
(an ordinary row, sample 0), then the recorded debate as turn rows (`records.schema.TURN_COLUMNS`):
turn 0 the first answers (sample 1 of each seat), then one row per later turn, each naming the
rows it was written after reading.

The source kept a turn's explanation (what the other seats were shown) and, apart, the answer it
read from the reply (`P`); the reply itself is not kept. A turn row's response is the two joined:
the explanation, then a line `Answer: (X)` with the answer the source read (no such line where it
read none). Questions the debate did not reach (the first answers agreed) have turn 0 only."""

from __future__ import annotations

from collections.abc import Sequence

from consortium.core.tokens import estimate_tokens
from consortium.records.importers.base import SourceImport, SourceOutput
from consortium.records.importers.ford_files import (
    SEAT_MODELS,
    FordQuestion,
    FordRun,
    FordTurn,
)
from consortium.records.rows import question_order
from consortium.records.schema import SourceFile, turn_ref

FIRST_TURN_SAMPLE = 1
"""A seat's turn-0 row is its sample 1 (sample 0 is its reply to the question alone)."""


def turn_response(turn: FordTurn) -> str:
    """A turn's text as a reply: the explanation the source kept, then the answer it read."""
    text = turn.text.strip()
    return f"{text}\n\nAnswer: ({turn.letter})" if turn.letter else text


def _ordinary(qid: str, question: FordQuestion, run: FordRun, seat: str) -> SourceOutput:
    letter = next(t.letter for t in question.first if t.seat == seat)
    return SourceOutput(
        question_id=qid,
        question=question.question,
        reference=question.gold,
        model=SEAT_MODELS[seat],
        sample=0,
        response=run.singles[seat][qid],
        source_answer=letter,
        source_correct=letter == question.gold,
    )


def _turn_rows(
    qid: str, question: FordQuestion, turns: Sequence[FordTurn], firsts: int
) -> list[SourceOutput]:
    """`turns` in the order spoken, the first `firsts` of them the first answers."""
    rows: list[SourceOutput] = []
    samples: dict[str, int] = {}
    for index, turn in enumerate(turns):
        model = SEAT_MODELS[turn.seat]
        sample = samples.get(model, FIRST_TURN_SAMPLE - 1) + 1
        samples[model] = sample
        seen = () if index < firsts else tuple(turn_ref(r.model, r.sample) for r in rows)
        shown = question.question + "".join(r.response or "" for r in rows[: len(seen)])
        rows.append(
            SourceOutput(
                question_id=qid,
                question=question.question,
                reference=question.gold,
                model=model,
                sample=sample,
                response=turn_response(turn),
                source_answer=turn.letter,
                source_correct=turn.letter == question.gold,
                tokens_in=estimate_tokens(shown),
                turn=0 if index < firsts else index - firsts + 1,
                seen=seen,
            )
        )
    return rows


def ford_rows(run: FordRun, files: Sequence[SourceFile]) -> SourceImport:
    """Every row of a run; each question's turn 0 and later turns from its recorded debate
    (which carries its own first answers) or, without one, from the run's turn-0 file."""
    outputs: list[SourceOutput] = []
    for qid in sorted(run.questions, key=question_order):
        question = run.questions[qid]
        outputs += [_ordinary(qid, question, run, seat) for seat in run.seats]
        debate = run.debates.get(qid)
        turns = (*debate.first, *debate.later) if debate else question.first
        outputs += _turn_rows(qid, question, turns, len(run.seats))
    return SourceImport(outputs, list(files), list(run.notes))
