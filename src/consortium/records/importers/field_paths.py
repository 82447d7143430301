"""A field map's paths (`question.stem`, `vanilla.generation[0]`, `choices[1].text`): parsing
them, checking a map's keys, and reading a row through them with one clear line when a row lacks
a path."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from consortium.records.errors import RecordsError

FIELDS: dict[str, str] = {
    "question": "the question text (required)",
    "response": "the model's response (required; a list is one sample per item)",
    "reference": "the gold answer",
    "id": "the question id (default: the row number, from 1)",
    "options": "the choices, joined into the question as 'A. text' lines",
    "correct": "the source's verdict (bool, 0/1, true/false, yes/no, correct/incorrect)",
    "model": "a row field naming the model (files holding several models)",
    "sample": "the sample index (default: 0, 1, … per question and model)",
    "tokens_in": "input tokens",
    "tokens_out": "output tokens",
    "cost_usd": "the call's cost in USD",
}
REQUIRED = ("question", "response")

Row = dict[str, Any]
Step = str | int
_SEGMENT = re.compile(r"^([^\[\]]+)((?:\[-?\d+\])*)$")
_INDEX = re.compile(r"\[(-?\d+)\]")


def parse_path(text: str) -> tuple[Step, ...]:
    """`vanilla.generation[0]` -> ("vanilla", "generation", 0)."""
    steps: list[Step] = []
    for segment in text.split("."):
        match = _SEGMENT.match(segment.strip())
        if match is None:
            raise RecordsError(
                f"field path {text!r}: expected keys joined by dots with [n] indexes, "
                "e.g. question.stem, vanilla.generation[0], choices[1].text"
            )
        steps.append(match.group(1))
        steps += [int(index) for index in _INDEX.findall(match.group(2))]
    return tuple(steps)


def checkkeys_of(field_map: Mapping[str, str]) -> None:
    unknown = [key for key in field_map if key not in FIELDS]
    if "letters" in unknown:
        raise RecordsError(
            "field map: letters is not a field of a row; declare a choice data set's letters "
            'with --letters ABCDEFGHIJ (letters = "ABCDEFGHIJ" in --config, beside kind)'
        )
    if unknown:
        raise RecordsError(f"field map: unknown field {unknown[0]!r}; known: {', '.join(FIELDS)}")


def check_map(field_map: Mapping[str, str]) -> dict[str, tuple[Step, ...]]:
    """The map's paths, parsed; one line naming an unknown key or a missing required one."""
    checkkeys_of(field_map)
    missing = [key for key in REQUIRED if not field_map.get(key)]
    if missing:
        raise RecordsError(
            f"field map: {' and '.join(missing)} not mapped (layout fields needs "
            "--map question=PATH --map response=PATH)"
        )
    return {key: parse_path(path) for key, path in field_map.items() if path}


def parse_map_items(items: Sequence[str]) -> dict[str, str]:
    """`["question=question.stem", …]` (the `--map` options) as a map; one line when malformed."""
    field_map: dict[str, str] = {}
    for item in items:
        key, sep, path = item.partition("=")
        if not sep or not key.strip() or not path.strip():
            raise RecordsError(f"--map {item!r}: expected FIELD=PATH, e.g. question=question.stem")
        field_map[key.strip()] = path.strip()
    checkkeys_of(field_map)
    for path in field_map.values():
        parse_path(path)
    return field_map


# ---- reading a row through a path ----------------------------------------------------------


class MissingPath(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _shown(steps: Sequence[Step]) -> str:
    text = ""
    for step in steps:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def keys_of(value: Mapping[str, Any]) -> str:
    keys = [str(k) for k in value]
    return ", ".join(keys[:12]) + (", …" if len(keys) > 12 else "")


def kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _step(value: Any, step: Step, before: Sequence[Step]) -> Any:
    where = f"'{_shown(before)}'" if before else "the row"
    if isinstance(step, int):
        if not isinstance(value, list):
            raise MissingPath(f"{where} is {kind_of(value)}, not a list")
        if not -len(value) <= step < len(value):
            raise MissingPath(f"{where} has {len(value)} item{'s' if len(value) != 1 else ''}")
        return value[step]
    if not isinstance(value, dict):
        raise MissingPath(f"{where} is {kind_of(value)}, not an object")
    if step not in value:
        return _missing_key(value, before)
    return value[step]


def _missing_key(value: Mapping[str, Any], before: Sequence[Step]) -> Any:
    if before:
        raise MissingPath(f"'{_shown(before)}' has keys: {keys_of(value)}")
    raise MissingPath(f"keys: {keys_of(value)}")


def resolve(row: Row, steps: tuple[Step, ...], text: str) -> Any:
    """The value at a path; a key holding the whole path (a CSV column `question.stem`) wins."""
    if text in row:
        return row[text]
    value: Any = row
    for i, step in enumerate(steps):
        value = _step(value, step, steps[:i])
    return value


# ---- values --------------------------------------------------------------------------------
