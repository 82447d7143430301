"""The FORD layout (Waste-Wood/FORD `output/`): debates between real models, read into one recorded
debate per disputed question of a run.

A team's folder holds `round0/{set}_agreed.jsonl` (both first answers the same: no debate) and
`round0/{set}_candidate.jsonl` (they differ), then `round{k}_{seat}/{set}_agreed{run}.jsonl` and
`…_candidate{run}.jsonl`: the debates that agreed at turn k (the seat of the folder name spoke), and
those carried on. Each record holds the whole exchange so far: `R` the messages (the question,
then each turn's text as the source kept it), `P` the answer the source read from each turn, `M`
the speakers (wrong in the gpt-4 folders: the seat comes from the folder name). In the
roundtable `R` holds one list of turns per seat; in ANLI's files of the gpt-3.5 / davinci debate
the records still disagreeing carry only each seat's latest answer (`U1`, `U2`).

The suffix of a file names a run (`""`, `2`, `3`: further runs of the same debates); the runs are
not clean lineages (a run's turn-k file may continue another run's turn k-1), so a run's debate of
a question is read from the record that ends it (agreed at turn k, or still disagreeing at the
last turn recorded), which holds every turn: the earliest such record of that run's files. A
question whose run has no ending record keeps the longest record of the run (`unfinished`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from consortium.records.errors import RecordsError
from consortium.records.importers.base import read_jsonl
from consortium.tasks.choice import Choices

SEAT_MODELS = {"chatgpt": "gpt-3.5-turbo", "davinci": "text-davinci-003", "gpt4": "gpt-4"}
"""The source's seat names and the models they are (the folder names: `output/chatgpt` …)."""
Ending = Literal["agreed", "cap", "unfinished"]
_ROUND = re.compile(r"^round(\d+)(?:_([a-z0-9]+))?$")
_FILE = re.compile(r"^(?P<set>[a-z]+)_(?P<kind>agreed|candidate)(?P<run>\d*)\.jsonl$")


@dataclass(frozen=True, slots=True)
class FordTurn:
    seat: str
    text: str
    """The turn's text as the source kept it (its explanation: what the other seats were shown)."""
    letter: str | None
    """The answer the source read from the turn, as an option letter (None: none read)."""


@dataclass(frozen=True)
class FordDebate:
    first: tuple[FordTurn, ...]
    """The first answers, in seat order."""
    later: tuple[FordTurn, ...]
    ending: Ending
    file: str


@dataclass
class FordQuestion:
    question: str
    """The question as the debate showed it: `Question: …\\nChoices: (A) … (B) …`."""
    gold: str
    first: tuple[FordTurn, ...]
    """The first answers as the run's turn-0 file holds them."""
    disputed: bool


@dataclass
class FordRun:
    """One run of a team's debates on one set, read."""

    seats: tuple[str, ...]
    max_rounds: int
    questions: dict[str, FordQuestion]
    """By question id: the line of the question in `output/chatgpt/{set}.jsonl`."""
    singles: dict[str, dict[str, str]]
    """seat -> question id -> the seat's reply to the question alone (`output/{seat}/{set}`)."""
    debates: dict[str, FordDebate]
    files: list[Path]
    notes: list[str] = field(default_factory=list)


def _records(path: Path) -> list[dict[str, Any]]:
    return [row for row in read_jsonl(path) if isinstance(row, dict)]


def _content(message: Any) -> str:
    if isinstance(message, dict):  # one ANLI record spells the key "context"
        return str(message.get("content", message.get("context", "")))
    return ""


def _letter(value: Any, choices: Choices) -> str | None:
    if value is None or str(value).strip().lower() in ("", "none"):
        return None
    return choices.letter_of(str(value))


class _Ids:
    """Question ids from the single-model files: the line of a question in the first seat's file,
    found by its text and, for a question asked twice, by the first answers' texts."""

    def __init__(self, singles: dict[str, list[dict[str, Any]]], base: str) -> None:
        self.singles = singles
        self.by_question: dict[str, list[int]] = {}
        for index, row in enumerate(singles[base]):
            self.by_question.setdefault(str(row["Q"]), []).append(index)

    def find(self, record: dict[str, Any], first: Sequence[FordTurn]) -> list[str]:
        """The ids the record may be of, the likeliest first (one, unless asked twice)."""
        found = self.by_question.get(str(record["Q"]), [])
        for turn in first:
            if len(found) < 2:
                break
            probe = turn.text.strip()[:40]
            kept = [i for i in found if probe in str(self.singles[turn.seat][i]["R"]["text"])]
            found = kept or found
        return [str(i) for i in found]


def _seat_lists(messages: list[Any], seats: Sequence[str], turns: int) -> list[list[Any]]:
    """The roundtable's turns per seat. In its e-CARE files a seat's first later turn may sit in
    the list of the seat that speaks after it (right after that seat's first answer): moved back
    here; any other shape is IndexError."""
    lists = [list(turn_list) for turn_list in messages]
    n = len(seats)
    expected = [1 + len(range(s, turns - n, n)) for s in range(n)]
    short = [s for s in range(n) if len(lists[s]) == expected[s] - 1]
    long = [s for s in range(n) if len(lists[s]) == expected[s] + 1]
    if len(short) == len(long) == 1 and long[0] > short[0]:
        lists[short[0]].insert(1, lists[long[0]].pop(1))
    if [len(turn_list) for turn_list in lists] != expected:
        raise IndexError("a seat's turns do not match the answers recorded")
    return lists


def _turns(record: dict[str, Any], seats: Sequence[str], choices: Choices) -> list[FordTurn]:
    """Every turn of a record in the order spoken (KeyError, IndexError: a malformed record)."""
    messages, letters = record["R"][2:], record["P"][2:]
    n = len(seats)
    per_seat = _seat_lists(messages, seats, len(letters)) if isinstance(messages[0], list) else []
    turns = []
    for j, letter in enumerate(letters):
        seat = seats[j] if j < n else seats[(j - n) % n]
        if per_seat:  # the roundtable: one list of turns per seat
            message = per_seat[seats.index(seat)][0 if j < n else 1 + (j - n) // n]
        else:
            message = messages[j]
        turns.append(FordTurn(seat, _content(message), _letter(letter, choices)))
    return turns


def _seat_folders(team: Path, seats: Sequence[str]) -> dict[int, Path]:
    """Turn k's folder (`round{k}_{seat}`, k ≥ 1, `round0` for k = 0), the seat checked against
    the rotation the debate follows."""
    folders: dict[int, Path] = {}
    for path in sorted(p for p in team.iterdir() if p.is_dir()):
        match = _ROUND.match(path.name)
        if match is None:
            continue
        k = int(match.group(1))
        expected = None if k == 0 else seats[(k - 1) % len(seats)]
        if match.group(2) != expected:
            raise RecordsError(
                f"{path}: turn {k} should be {expected or 'the first answers'}'s in a debate of "
                f"{', '.join(seats)}"
            )
        folders[k] = path
    if 0 not in folders:
        raise RecordsError(f"{team}: no round0 folder (not a FORD debate folder)")
    return folders


def read_singles(root: Path, seats: Sequence[str], name: str) -> dict[str, list[dict[str, Any]]]:
    """Each seat's replies to the questions alone, in the one question order."""
    singles = {seat: _records(root / "output" / seat / f"{name}.jsonl") for seat in seats}
    base = singles[seats[0]]
    for seat in seats[1:]:
        rows = singles[seat]
        if len(rows) != len(base) or any(a["Q"] != b["Q"] for a, b in zip(base, rows, strict=True)):
            raise RecordsError(
                f"{root / 'output' / seat / f'{name}.jsonl'}: not the questions of "
                f"output/{seats[0]}/{name}.jsonl in the same order"
            )
    return singles


class _RunReader:
    """Reads one run of a team's debates on one set (`read_ford_run`)."""

    def __init__(self, root: Path, team: str, seats: tuple[str, ...], name: str, run: str):
        self.team = root / "output" / team
        if not self.team.is_dir():
            raise RecordsError(f"FORD debate folder not found: {self.team}")
        self.seats, self.name, self.run = seats, name, run
        self.folders = _seat_folders(self.team, seats)
        raw = read_singles(root, seats, name)
        self.ids = _Ids(raw, seats[0])
        self.singles = {
            s: {str(i): str(r["R"]["text"]) for i, r in enumerate(raw[s])} for s in seats
        }
        self.files = [root / "output" / seat / f"{name}.jsonl" for seat in seats]
        self.notes: list[str] = []
        self.questions: dict[str, FordQuestion] = {}
        self.choices: dict[str, Choices] = {}
        self.by_prefix: dict[str, str | None] = {}
        """A record's messages so far (JSON) -> its last turn's letter: an ANLI record keeping only
        the latest answers (`U1`, `U2`) takes its earlier turns' letters from the records before."""
        self.ended: dict[str, tuple[int, FordDebate]] = {}
        self.unfinished: dict[str, tuple[int, FordDebate]] = {}
        self.malformed: dict[str, int] = {}

    def file(self, k: int, kind: str) -> Path | None:
        folder = self.folders.get(k)
        if folder is None:
            return None
        for run in (self.run, "") if k == 0 else (self.run,):
            path = folder / f"{self.name}_{kind}{run}.jsonl"
            if path.is_file():
                return path
        return None

    def cap(self) -> int:
        """The last turn recorded for this set (any run): a debate still disagreeing there ended."""
        return max(
            k for k, folder in self.folders.items() if any(folder.glob(f"{self.name}_*.jsonl"))
        )

    def read_first(self) -> None:
        for kind in ("agreed", "candidate"):
            path = self.file(0, kind)
            if path is None:
                raise RecordsError(f"{self.folders[0]}: no {self.name}_{kind}.jsonl")
            self.files.append(path)
            for record in _records(path):
                question = _content(record["R"][1])
                choices = Choices.of(question)
                first = _turns(record, self.seats, choices)
                qid = next(
                    (q for q in self.ids.find(record, first) if q not in self.questions), None
                )
                if qid is None:
                    self.notes.append(f"{path.name}: a record of no single-model question")
                    continue
                self.choices[qid] = choices
                gold = choices.letter_of(str(record["A"]))
                self.questions[qid] = FordQuestion(question, gold, tuple(first), kind != "agreed")

    def read_later(self) -> None:
        cap = self.cap()
        for k in range(1, cap + 1):
            for kind in ("agreed", "candidate"):
                path = self.file(k, kind)
                if path is None:
                    continue
                self.files.append(path)
                ending: Ending = (
                    "agreed" if kind == "agreed" else "cap" if k == cap else "unfinished"
                )
                for record in _records(path):
                    self._read_record(record, k, ending, path)

    def _read_record(self, record: dict[str, Any], k: int, ending: Ending, path: Path) -> None:
        n = len(self.seats)
        try:
            qid = self._question_of(record)
            turns = self._turns(record, qid)
        except (KeyError, IndexError, TypeError):
            self.malformed[path.name] = self.malformed.get(path.name, 0) + 1
            return
        if len(turns) != n + k:
            self.malformed[path.name] = self.malformed.get(path.name, 0) + 1
            return
        self.by_prefix[_prefix_key(record, n + k)] = turns[-1].letter
        where = str(path.relative_to(self.team.parent.parent))
        debate = FordDebate(tuple(turns[:n]), tuple(turns[n:]), ending, where)
        kept = self.ended if ending != "unfinished" else self.unfinished
        if qid not in kept or (ending == "unfinished") == (k > kept[qid][0]):
            kept[qid] = (k, debate)

    def _question_of(self, record: dict[str, Any]) -> str:
        """A later record's question: of the ids it may be, the one whose first answers it
        repeats (KeyError: none)."""
        first = _first_texts(record, self.seats)
        found = [q for q in self.ids.find(record, first) if q in self.questions]
        texts = [turn.text for turn in first]
        same = [q for q in found if [t.text for t in self.questions[q].first] == texts]
        if not (same or found):
            raise KeyError("Q")
        return (same or found)[0]

    def _turns(self, record: dict[str, Any], qid: str) -> list[FordTurn]:
        choices = self.choices[qid]
        if "P" in record:
            return _turns(record, self.seats, choices)
        if len(self.seats) != 2:
            raise KeyError("P")
        n = len(self.seats)
        texts = [_content(m) for m in record["R"][2 + n :]]
        seats = [self.seats[j % n] for j in range(len(texts))]
        letters = [self.by_prefix.get(_prefix_key(record, n + j + 1)) for j in range(len(texts))]
        latest = {self.seats[0]: record["U1"], self.seats[1]: record["U2"]}
        for j in range(max(0, len(texts) - 2), len(texts)):
            letters[j] = _letter(latest[seats[j]], choices)
        first = _first_texts(record, self.seats)
        firsts = [
            FordTurn(turn.seat, turn.text, known.letter)
            for turn, known in zip(first, self.questions[qid].first, strict=True)
        ]
        return firsts + [FordTurn(*item) for item in zip(seats, texts, letters, strict=True)]

    def run_read(self) -> FordRun:
        self.read_first()
        self.read_later()
        debates: dict[str, FordDebate] = {}
        for qid, question in self.questions.items():
            if not question.disputed:
                continue
            found = self.ended.get(qid) or self.unfinished.get(qid)
            if found is not None:
                debates[qid] = found[1]
        for name, count in sorted(self.malformed.items()):
            self.notes.append(f"{name}: {count} records not read (a turn without its message)")
        return FordRun(
            self.seats, self.cap(), self.questions, self.singles, debates, self.files, self.notes
        )


def _first_texts(record: dict[str, Any], seats: Sequence[str]) -> list[FordTurn]:
    """The first answers of a record, without letters (the roundtable keeps each seat's turns in
    a list of its own)."""
    messages = record["R"][2 : 2 + len(seats)]
    if messages and isinstance(messages[0], list):
        messages = [turns[0] for turns in messages]
    return [FordTurn(s, _content(m), None) for s, m in zip(seats, messages, strict=True)]


def _prefix_key(record: dict[str, Any], turns: int) -> str:
    return json.dumps([str(record["Q"]), record["R"][: 2 + turns]], sort_keys=True)


def read_ford_run(root: Path, team: str, seats: Sequence[str], name: str, run: str) -> FordRun:
    """Run `run` ("" for the files without a suffix, "2", "3") of the debates of `seats`
    (`chatgpt`, `davinci`, `gpt4`, in the order they speak) on set `name`, from the FORD folder
    `root` (its `output/` beside `data/`)."""
    return _RunReader(root, team, tuple(seats), name, run).run_read()
