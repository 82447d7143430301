"""A tiny FORD-layout folder written in a temporary folder (invented questions and texts): the
files `records.importers.ford_files` reads, for tests that need no real data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

QUESTIONS = [
    ("Toy question zero?", "(A) left (B) right", "(A)"),
    ("Toy question one?", "(A) up (B) down", "(B)"),
    ("Toy question two?", "(A) in (B) out", "(A)"),
    ("Toy question three?", "(A) hot (B) cold", "(B)"),
]
SYSTEM = "You are in a toy debate."


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def reply(seat: str, index: int, letter: str) -> str:
    """A seat's reply to question `index` alone: an answer line, then its explanation."""
    return f"Answer: ({letter})\nExplanation: {seat} reasons about toy {index}."


def explanation(seat: str, index: int, turn: int = 0) -> str:
    return f"{seat} reasons about toy {index}." if turn == 0 else f"{seat} turn {turn} on {index}."


def record(index: int, seats: Sequence[str], letters: Sequence[str]) -> dict[str, Any]:
    """A debate record of question `index`: the first answers, then one turn per later letter,
    the seats taking turns."""
    q, options, gold = QUESTIONS[index]
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


def write_toy_ford(root: Path) -> Path:
    """`root/ford`: gpt-3.5 vs gpt-4 on set `toy`, two later turns at most. Question 0: both first
    answers right (no debate); 1: gpt-4 right, gpt-3.5 gives in at turn 1; 2: both hold their
    answers to the cap; 3: gpt-3.5 right, gpt-4 gives in at turn 2 (a wrong answer talked into
    the right one)."""
    ford = root / "ford"
    firsts = {0: ("A", "A"), 1: ("A", "B"), 2: ("A", "B"), 3: ("B", "A")}
    for s, seat in enumerate(("chatgpt", "gpt4")):
        rows = [
            {"Q": q, "A": gold, "O": options, "R": {"text": reply(seat, i, firsts[i][s])}}
            for i, (q, options, gold) in enumerate(QUESTIONS)
        ]
        _write(ford / "output" / seat / "toy.jsonl", rows)
    team = ford / "output" / "debate_chatgpt_gpt4"
    seats = ("chatgpt", "gpt4")
    _write(team / "round0/toy_agreed.jsonl", [record(0, seats, ["A", "A"])])
    _write(
        team / "round0/toy_candidate.jsonl", [record(i, seats, list(firsts[i])) for i in (1, 2, 3)]
    )
    _write(team / "round1_chatgpt/toy_agreed.jsonl", [record(1, seats, ["A", "B", "B"])])
    _write(
        team / "round1_chatgpt/toy_candidate.jsonl",
        [record(2, seats, ["A", "B", "A"]), record(3, seats, ["B", "A", "B"])],
    )
    _write(team / "round2_gpt4/toy_agreed.jsonl", [record(3, seats, ["B", "A", "B", "B"])])
    _write(team / "round2_gpt4/toy_candidate.jsonl", [record(2, seats, ["A", "B", "A", "B"])])
    return ford
