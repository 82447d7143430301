"""Benchmark files (JSONL, JSONL.gz, JSON, CSV) and Hugging Face datasets, as Tasks."""

from __future__ import annotations

import csv
import gzip
import json
import os
import random
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from consortium.core.errors import TaskSpecError
from consortium.tasks.base import Task

Row = dict[str, Any]


def read_rows(path: str | Path) -> list[Row]:
    """Rows of a .jsonl, .jsonl.gz, .json (a list, or {"data": [...]}) or .csv file."""
    path = Path(path)
    if not path.exists():
        raise TaskSpecError(f"task file not found: {path}")
    name = path.name.lower()
    try:
        if name.endswith((".jsonl.gz", ".json.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return _jsonl(handle, path)
        if name.endswith(".jsonl"):
            with path.open(encoding="utf-8") as handle:
                return _jsonl(handle, path)
        if name.endswith(".json"):
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = data.get("data") if isinstance(data, dict) else data
            if not isinstance(rows, list):
                raise TaskSpecError(f"{path}: expected a JSON list of objects")
            return rows
        if name.endswith(".csv"):
            csv.field_size_limit(sys.maxsize)
            with path.open(newline="", encoding="utf-8") as handle:
                return list(csv.DictReader(handle))
    except UnicodeDecodeError:
        raise TaskSpecError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise TaskSpecError(f"{path}: invalid JSON ({error})") from None
    raise TaskSpecError(f"{path}: unknown format (use .jsonl, .jsonl.gz, .json or .csv)")


def _jsonl(lines: Iterable[str], path: Path) -> list[Row]:
    rows = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise TaskSpecError(f"{path}:{number}: invalid JSON ({error.msg})") from None
    return rows


def read_hf(name: str, split: str, config: str | None = None) -> list[Row]:
    """Rows of a Hugging Face dataset; needs the `datasets` package and a network."""
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1":
        raise TaskSpecError(
            f"Hugging Face dataset {name!r}: offline (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE is "
            "set); download it elsewhere and pass path=FILE"
        )
    try:
        import datasets  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise TaskSpecError(
            f"Hugging Face dataset {name!r} needs the datasets package: "
            "pip install 'consortium[hf]'"
        ) from None
    try:
        loaded = datasets.load_dataset(name, config, split=split)
    except (ConnectionError, OSError) as error:
        raise TaskSpecError(
            f"Hugging Face dataset {name!r}: cannot download ({error}); offline? pass path=FILE"
        ) from None
    return [dict(row) for row in loaded]


def _field(row: Row, *names: str) -> Any:
    for name in names:
        value = row.get(name)
        if value is not None and str(value).strip():
            return value
    present = [name for name in names if name in row]
    if present:
        raise TaskSpecError(f"a row's {present[0]} is empty (a task needs text to answer)")
    raise TaskSpecError(f"a row has none of the fields {', '.join(names)}: {sorted(row)[:8]}")


def gsm8k_task(row: Row, index: int, split: str) -> Task:
    solution = str(_field(row, "answer"))
    final = solution.split("####")[-1].strip().replace(",", "")
    return Task(
        f"gsm8k/{split}/{index}",
        str(_field(row, "question")),
        "gsm8k",
        split,
        final,
        {"solution": solution},
    )


def math_task(row: Row, index: int, split: str) -> Task:
    identifier = row.get("unique_id") or row.get("id") or index
    return Task(
        f"math/{split}/{identifier}",
        str(_field(row, "problem", "question")),
        "math",
        split,
        str(_field(row, "answer")),
        {"subject": row.get("subject"), "level": row.get("level")},
    )


def humaneval_task(row: Row, index: int, split: str) -> Task:
    prompt = str(_field(row, "prompt"))
    return Task(
        str(row.get("task_id", f"humaneval/{index}")),
        prompt,
        "humaneval",
        split,
        str(row.get("canonical_solution", "")),
        {
            "format": "humaneval",
            "prompt": prompt,
            "test": str(_field(row, "test")),
            "entry_point": str(_field(row, "entry_point")),
        },
    )


MBPP_SPLITS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}


def mbpp_task(row: Row, index: int, split: str) -> Task:
    tests = row["test_list"]
    if isinstance(tests, str):
        tests = json.loads(tests)
    question = f'"""\n{_field(row, "text", "prompt")}\n{tests[0]}\n"""\n'
    return Task(
        f"mbpp/{row.get('task_id', index)}",
        question,
        "mbpp",
        split,
        str(row.get("code", "")),
        {
            "format": "mbpp",
            "test_list": list(tests),
            "test_setup_code": row.get("test_setup_code", ""),
        },
    )


def choice_task(row: Row, index: int, split: str) -> Task:
    question = str(_field(row, "question"))
    choices = row.get("choices")
    if isinstance(choices, dict):  # {"label": [...], "text": [...]} as in ARC
        choices = choices.get("text")
    if not choices:
        choices = [row[letter] for letter in "ABCDEFGHIJ" if row.get(letter)]
    letters = "ABCDEFGHIJ"[: len(choices)]
    answer = _field(row, "answer", "answerKey", "label")
    if isinstance(answer, int) or (isinstance(answer, str) and answer.isdigit()):
        answer = letters[int(answer)]
    options = "\n".join(f"{letter}. {text}" for letter, text in zip(letters, choices, strict=False))
    return Task(
        f"mc/{split}/{row.get('id', index)}",
        f"{question}\n{options}",
        "mc",
        split,
        str(answer).strip().upper(),
        {"letters": letters},
    )


FORMATS: dict[str, Callable[[Row, int, str], Task]] = {
    "gsm8k": gsm8k_task,
    "math": math_task,
    "humaneval": humaneval_task,
    "mbpp": mbpp_task,
    "mc": choice_task,
}


def build_tasks(
    kind: str,
    rows: list[Row],
    *,
    split: str = "test",
    limit: int | None = None,
    seed: int = 0,
) -> list[Task]:
    make = FORMATS[kind]
    if kind == "mbpp" and split in MBPP_SPLITS and rows and "task_id" in rows[0]:
        low, high = MBPP_SPLITS[split]
        rows = [r for r in rows if low <= int(r["task_id"]) <= high]
    tasks = [make(row, index, split) for index, row in enumerate(rows)]
    if limit is not None and limit < len(tasks):
        chosen = sorted(random.Random(f"{seed}:{kind}").sample(range(len(tasks)), limit))
        tasks = [tasks[i] for i in chosen]
    return tasks
