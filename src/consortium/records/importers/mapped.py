"""Any file shape by a declared field map (the `fields` layout): JSONL, JSON, CSV, Parquet or a
Hugging Face `datasets` folder (`save_to_disk`), each row read through paths such as
`question.stem`, `vanilla.generation[0]` or `choices[1].text`.

The map's keys are the fields of a recorded output (`FIELDS`); `question` and `response` are
required. Options (a list of strings, a list of {text, label} objects, an object letter -> text,
or {text: [...], label: [...]}) are joined into the question as `A. text` lines, and a reference
given as an option's index, label or text becomes its letter."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import (
    SourceImport,
    SourceOutput,
    gold_text,
    text_or_none,
)
from consortium.records.importers.field_paths import (
    MissingPath,
    Row,
    Step,
    check_map,
    keys_of,
    kind_of,
    resolve,
)
from consortium.records.importers.row_files import read_rows
from consortium.records.schema import SourceFile
from consortium.tasks.choice import LETTERS

_TRUE = {"true", "yes", "correct", "1", "1.0", "y", "t"}
_FALSE = {"false", "no", "incorrect", "0", "0.0", "n", "f"}


@dataclass(frozen=True)
class _Where:
    file: str
    row: int

    def error(self, field: str, detail: str) -> RecordsError:
        return RecordsError(f"{self.file} row {self.row}: {field}: {detail}")


def _blank(value: Any) -> bool:
    """None, an empty CSV cell or a null float (NaN) read from Parquet or pandas."""
    if isinstance(value, float):
        return math.isnan(value)
    return value is None or (isinstance(value, str) and not value.strip())


def _verdict(value: Any, where: _Where, path: str) -> bool | None:
    if _blank(value):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise where.error(f"correct ({path})", f"{value!r} is not a verdict (true/false, 1/0, yes/no)")


def _integer(value: Any, where: _Where, label: str) -> int | None:
    if _blank(value):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number.is_integer() or isinstance(value, bool):
        raise where.error(label, f"{value!r} is not a whole number")
    return int(number)


def _decimal(value: Any, where: _Where, label: str) -> float | None:
    if _blank(value):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise where.error(label, f"{value!r} is not a number") from None


@dataclass(frozen=True)
class Options:
    letters: str
    texts: list[str]
    labels: list[str]
    """The source's own labels ("1".."4" in some ARC rows), matched by a reference."""

    def block(self) -> str:
        return "\n".join(
            f"{letter}. {text}" for letter, text in zip(self.letters, self.texts, strict=True)
        )

    def letter_of(self, reference: Any) -> str | None:
        """The option a reference names: its label, its letter, its 0-based index or its text."""
        if _blank(reference):
            return None
        text = gold_text(reference)
        if text in self.labels:
            return self.letters[self.labels.index(text)]
        if len(text) == 1 and text.upper() in self.letters:
            return text.upper()
        stripped = [t.strip() for t in self.texts]
        number = isinstance(reference, int | float) and not isinstance(reference, bool)
        # a JSON number is an index; a text is first an option's text ("3" of options 3 / 4 / 5)
        if not number and stripped.count(text) == 1:
            return self.letters[stripped.index(text)]
        if number or text.lstrip("-").isdigit():
            index = int(float(text))
            if 0 <= index < len(self.texts):
                return self.letters[index]
        if stripped.count(text) == 1:
            return self.letters[stripped.index(text)]
        return None


def _option_pairs(value: Any) -> list[tuple[str | None, str]]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith(("[", "{")) else None
    if isinstance(value, dict) and isinstance(value.get("text"), list):
        texts = value["text"]
        labels = value.get("label") or [None] * len(texts)
        return [
            (None if lab is None else str(lab), str(t))
            for lab, t in zip(labels, texts, strict=True)
        ]
    if isinstance(value, dict):
        return [(str(key), str(text)) for key, text in value.items()]
    if isinstance(value, list):
        return [_option_pair(item) for item in value]
    raise ValueError(f"expected a list or an object of options, got {kind_of(value)}")


def _option_pair(item: Any) -> tuple[str | None, str]:
    if isinstance(item, dict):
        if "text" not in item:
            raise ValueError(f"an option object without 'text' (keys: {keys_of(item)})")
        label = item.get("label")
        return (None if label is None else str(label), str(item["text"]))
    return (None, str(item))


def options_of(value: Any) -> Options:
    pairs = _option_pairs(value)
    if not pairs:
        raise ValueError("no options")
    if len(pairs) > len(LETTERS):
        raise ValueError(f"{len(pairs)} options, at most {len(LETTERS)}")
    labels = [label.strip() if label else "" for label, _ in pairs]
    upper = [label.upper() for label in labels]
    own = all(len(u) == 1 and u in LETTERS for u in upper) and len(set(upper)) == len(upper)
    letters = "".join(upper) if own else LETTERS[: len(pairs)]
    return Options(letters, [text.strip() for _, text in pairs], labels)


# ---- one row -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RowReader:
    name: str
    paths: dict[str, tuple[Step, ...]]
    field_map: Mapping[str, str]
    model: str | None

    def get(self, row: Row, field: str, where: _Where) -> Any:
        if field not in self.paths:
            return None
        path = self.field_map[field]
        try:
            return resolve(row, self.paths[field], path)
        except MissingPath as missing:
            raise RecordsError(
                f"{where.file} row {where.row}: no field '{path}' ({missing.detail})"
            ) from None

    def outputs(self, row: Row, number: int) -> Iterator[SourceOutput]:
        where = _Where(self.name, number)
        if not isinstance(row, dict):
            raise RecordsError(f"{self.name} row {number}: expected an object, got {kind_of(row)}")
        question, reference, letters = self._question(row, where)
        raw_id = self.get(row, "id", where)
        question_id = str(number) if raw_id is None else gold_text(raw_id)
        model = text_or_none(self.get(row, "model", where)) or self.model
        if model is None:
            raise where.error("model", "none given (--file PATH=MODEL, --model or --map model=)")
        responses = self.get(row, "response", where)
        listed = isinstance(responses, list)
        for response in responses if listed else [responses]:
            self._plain(response, "response", where)
        sample = _integer(self.get(row, "sample", where), where, "sample")
        for index, response in enumerate(responses if listed else [responses]):
            text = text_or_none(response)
            yield SourceOutput(
                question_id=question_id,
                question=question,
                reference=reference,
                model=model,
                sample=-1 if sample is None else sample + index,
                response=text,
                source_correct=_verdict(self.get(row, "correct", where), where, "correct"),
                tokens_in=_integer(self.get(row, "tokens_in", where), where, "tokens_in"),
                tokens_out=_integer(self.get(row, "tokens_out", where), where, "tokens_out"),
                cost_usd=_decimal(self.get(row, "cost_usd", where), where, "cost_usd"),
                error=None if text is not None else "no response recorded",
                task={"letters": letters} if letters else {},
            )

    def _plain(self, value: Any, field: str, where: _Where) -> None:
        """A text field that holds an object or a list is a map pointing one level too high."""
        if isinstance(value, dict | list):
            inside = f"keys: {keys_of(value)}" if isinstance(value, dict) else f"{len(value)} items"
            raise where.error(
                field, f"'{self.field_map[field]}' is {kind_of(value)} ({inside}), not a text"
            )

    def _question(self, row: Row, where: _Where) -> tuple[str, str | None, str | None]:
        value = self.get(row, "question", where)
        self._plain(value, "question", where)
        question = text_or_none(value)
        if question is None:
            raise where.error("question", f"'{self.field_map['question']}' is empty")
        reference = self.get(row, "reference", where)
        self._plain(reference, "reference", where)
        if _blank(reference):
            reference = None
        if "options" not in self.paths:
            return question, None if reference is None else gold_text(reference), None
        try:
            options = options_of(self.get(row, "options", where))
        except (ValueError, json.JSONDecodeError) as error:
            raise where.error(f"options ('{self.field_map['options']}')", str(error)) from None
        letter = options.letter_of(reference)
        gold = letter or (None if reference is None else gold_text(reference))
        return f"{question.rstrip()}\n{options.block()}", gold, options.letters


def _numbered(outputs: list[SourceOutput]) -> list[SourceOutput]:
    """Samples not given by the file: 0, 1, … per (question, model), in file order."""
    counts: dict[tuple[str, str], int] = {}
    numbered = []
    for output in outputs:
        key = (output.question_id, output.model)
        if output.sample < 0:
            output = replace(output, sample=counts.get(key, 0))
        counts[key] = max(counts.get(key, 0), output.sample + 1)
        numbered.append(output)
    return numbered


def describe_map(field_map: Mapping[str, str]) -> str:
    return "fields " + ", ".join(f"{key}={path}" for key, path in field_map.items())


def read_mapped(path: str | Path, model: str | None, field_map: Mapping[str, str]) -> SourceImport:
    """One file (or `datasets` folder) read through a field map; `model` names the model of rows
    that do not name their own (`model` in the map)."""
    path = Path(path)
    paths = check_map(field_map)
    reader = _RowReader(path.name, paths, field_map, model)
    outputs: list[SourceOutput] = []
    for number, row in enumerate(read_rows(path), 1):
        outputs += reader.outputs(row, number)
    if not outputs:
        raise RecordsError(f"{path}: no rows")
    notes = []
    if "id" not in paths:
        notes.append(
            "question ids are the row numbers (from 1) of each file: the files list the "
            "questions in the same order (checked: the same row holds the same question)"
        )
    if "options" in paths:
        notes.append(
            f"the options ({field_map['options']}) are joined into the question as 'A. text' "
            "lines; a reference given as an option's index, label or text is its letter"
        )
    unresolved = {
        o.question_id
        for o in outputs
        if o.task and o.reference is not None and o.reference not in list(o.task["letters"])
    }
    if unresolved:
        notes.append(
            f"{path.name}: {len(unresolved)} question(s) whose reference is none of the options "
            f"(first: {sorted(unresolved)[0]})"
        )
    models = sorted({o.model for o in outputs})
    files = [SourceFile(path=str(path), model=", ".join(models), note=describe_map(field_map))]
    return SourceImport(_numbered(outputs), files, notes)


def check_aligned(imports: Sequence[SourceImport], field_map: Mapping[str, str]) -> None:
    """Files whose ids are row numbers must hold the same question on the same row."""
    if field_map.get("id"):
        return
    first: dict[str, tuple[str, str]] = {}
    for imported in imports:
        name = Path(imported.files[0].path).name if imported.files else "?"
        for output in imported.outputs:
            seen = first.setdefault(output.question_id, (name, output.question))
            if seen[1] != output.question:
                raise RecordsError(
                    f"{name} row {output.question_id} holds another question than {seen[0]} "
                    f"row {output.question_id}: ids are row numbers unless mapped; map an id "
                    "field (--map id=PATH) or list the questions in the same order"
                )
