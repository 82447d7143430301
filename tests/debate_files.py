"""A tiny FORD-layout folder written in a temporary folder (invented questions and texts): the
files `records.importers.ford_files` reads, for tests that need no real data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PATTERNS: dict[str, tuple[list[str], str]] = {
    # kind: (the letters in the order spoken, the file that ends the debate)
    "agree": (["A", "A"], "round0/toy_agreed"),
    "gives in": (["A", "B", "B"], "round1_chatgpt/toy_agreed"),
    "holds": (["A", "B", "A", "B"], "round2_gpt4/toy_candidate"),
    "talked into": (["B", "A", "B", "B"], "round2_gpt4/toy_agreed"),
}
"""Question i follows pattern i % 4: both first answers right (no debate); gpt-4 right and
gpt-3.5 gives in at turn 1; both hold their answers to the cap (gpt-3.5's, stated first, wins
the tie: right); gpt-3.5 right and gpt-4 gives in at turn 2 (a wrong answer talked into the right
one)."""


def toy_questions(n: int) -> list[tuple[str, str, str]]:
    """`n` invented questions, the gold letter of each following its pattern's first answers."""
    golds = ["(A)", "(B)", "(A)", "(B)"]
    return [(f"Toy question {i}?", "(A) one way (B) the other", golds[i % 4]) for i in range(n)]


SYSTEM = "You are in a toy debate."


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def reply(seat: str, index: int, letter: str) -> str:
    """A seat's reply to question `index` alone: an answer line, then its explanation."""
    return f"Answer: ({letter})\nExplanation: {seat} reasons about toy {index}."


def explanation(seat: str, index: int, turn: int = 0) -> str:
    return f"{seat} reasons about toy {index}." if turn == 0 else f"{seat} turn {turn} on {index}."


def record(
    index: int,
    seats: Sequence[str],
    letters: Sequence[str],
    questions: Sequence[tuple[str, str, str]],
) -> dict[str, Any]:
    """A debate record of question `index`: the first answers, then one turn per later letter,
    the seats taking turns."""
    q, options, gold = questions[index]
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Question: {q}\nChoices: {options}"},
    ]
    n = len(seats)
    for j, _ in enumerate(letters):
        seat = seats[j % n]
        turn = 0 if j < n else j - n + 1
        messages.append({"role": "assistant", "content": explanation(seat, index, turn)})
    return {
        "Q": q,
        "A": gold,
        "O": options,
        "R": messages,
        "P": ["None", "None", *letters],
        "M": ["system", "system", *[seats[j % n] for j in range(len(letters))]],
    }


def _file_of(prefix: int, letters: Sequence[str], ending: str, seats: Sequence[str]) -> str:
    """Where the record of the first `prefix` letters of a debate sits: the ending file for the
    whole debate, else the candidate file of its last turn."""
    if prefix == len(letters):
        return ending
    later = prefix - len(seats)
    return (
        "round0/toy_candidate"
        if later == 0
        else f"round{later}_{seats[(later - 1) % 2]}/toy_candidate"
    )


def write_toy_ford(root: Path, n: int = 4) -> Path:
    """`root/ford`: gpt-3.5 vs gpt-4 on set `toy` (`n` questions following `PATTERNS`), two later
    turns at most."""
    ford = root / "ford"
    questions = toy_questions(n)
    kinds = list(PATTERNS)
    seats = ("chatgpt", "gpt4")
    for s, seat in enumerate(seats):
        rows = [
            {
                "Q": q,
                "A": gold,
                "O": options,
                "R": {"text": reply(seat, i, PATTERNS[kinds[i % 4]][0][s])},
            }
            for i, (q, options, gold) in enumerate(questions)
        ]
        _write(ford / "output" / seat / "toy.jsonl", rows)
    files: dict[str, list[dict[str, Any]]] = {}
    for i in range(n):
        letters, ending = PATTERNS[kinds[i % 4]]
        for prefix in range(len(seats), len(letters) + 1):
            name = _file_of(prefix, letters, ending, seats)
            files.setdefault(name, []).append(record(i, seats, letters[:prefix], questions))
    team = ford / "output" / "debate_chatgpt_gpt4"
    names = ["round0/toy_agreed", "round0/toy_candidate", "round1_chatgpt/toy_agreed"]
    names += ["round1_chatgpt/toy_candidate", "round2_gpt4/toy_agreed", "round2_gpt4/toy_candidate"]
    for name in names:
        _write(team / f"{name}.jsonl", files.get(name, []))
    return ford
