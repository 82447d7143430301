"""RouterBench layout (`routerbench_zs/<eval>_<split>.csv`): a row per prompt with `sample_id`,
`prompt` and `eval_name`, then per model a 0/1 correctness column, `<model>|model_response` and
`<model>|total_cost` (USD, recorded by RouterBench). Prompts and responses are Python list literals.

The CSVs hold no gold answer. For multiple choice the reference is the letter that the responses
RouterBench marked correct chose (None when none was marked correct or they disagree): a declared
reconstruction. For MBPP the reference is the task's own tests, joined on the question text to an
MBPP file (`mbpp_file`); unmatched prompts have no reference. Empty correctness cells stay None."""

from __future__ import annotations

import ast
import csv
import difflib
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport, SourceOutput, text_or_none
from consortium.records.schema import SourceFile
from consortium.tasks.choice import extract_choice


def literal_text(cell: str) -> str:
    """RouterBench stores prompts and responses as Python list literals of strings."""
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError):
        return cell
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return cell


CLOSE = 0.85
"""How close (difflib ratio) a re-worded MBPP prompt must be to an MBPP task's text to join."""


@dataclass(frozen=True)
class RouterBenchRow:
    """One prompt of a RouterBench CSV, its texts read out of their list literals."""

    sample_id: str
    eval_name: str
    prompt: str
    responses: dict[str, str]
    verdicts: dict[str, bool | None]
    """RouterBench's 0/1 correctness per model; None for an empty (ungraded) cell."""
    costs: dict[str, float | None]
    """USD per model; None for an empty cell."""


def routerbench_rows(path: str | Path) -> tuple[list[str], list[RouterBenchRow]]:
    """The models and the rows of one RouterBench CSV, in file order (both the importer and the
    replay read RouterBench through this)."""
    path = Path(path)
    if not path.is_file():
        raise RecordsError(f"source file not found: {path}")
    csv.field_size_limit(sys.maxsize)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        models = [f.split("|")[0] for f in fields if f.endswith("|model_response")]
        if not models or "sample_id" not in fields or "prompt" not in fields:
            raise RecordsError(f"{path}: not a RouterBench CSV (no sample_id, prompt, responses)")
        rows = [
            RouterBenchRow(
                sample_id=row["sample_id"],
                eval_name=row.get("eval_name", ""),
                prompt=literal_text(row["prompt"]),
                responses={m: literal_text(row[f"{m}|model_response"]) for m in models},
                verdicts={m: _verdict(row.get(m)) for m in models},
                costs={m: _number_or_none(row.get(f"{m}|total_cost")) for m in models},
            )
            for row in reader
        ]
    return models, rows


def _number_or_none(cell: str | None) -> float | None:
    return float(cell) if cell is not None and cell.strip() else None


def _verdict(cell: str | None) -> bool | None:
    number = _number_or_none(cell)
    return None if number is None else number >= 1.0


def _letters(prompt: str) -> str:
    last = prompt.rsplit("Print only a single choice", 1)
    tail = last[-1] if len(last) > 1 else prompt
    quoted = [c for c in "ABCDEFGHIJ" if f'"{c}"' in tail]
    return "".join(quoted) or "ABCD"


def load_mbpp_tests(path: str | Path) -> dict[str, dict[str, Any]]:
    """MBPP task text -> its task (tests, setup) from an mbpp.jsonl file."""
    tasks: dict[str, dict[str, Any]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            tests = row["test_list"]
            tasks.setdefault(
                " ".join(str(row["text"]).split()),
                {
                    "format": "mbpp",
                    "test_list": list(tests),
                    "test_setup_code": row.get("test_setup_code", ""),
                    "task_id": row.get("task_id"),
                },
            )
    return tasks


def read_routerbench(
    path: str | Path, *, mbpp_tests: dict[str, dict[str, Any]] | None = None
) -> SourceImport:
    path = Path(path)
    models, rows = routerbench_rows(path)
    outputs: list[SourceOutput] = []
    unresolved = unmatched = close = 0
    for row in rows:
        prompt = row.prompt
        responses = {m: text_or_none(row.responses[m]) for m in models}
        verdicts = row.verdicts
        task: dict[str, Any] = {}
        reference: str | None = None
        if row.eval_name == "mbpp":
            text = " ".join(prompt.split())
            found = (mbpp_tests or {}).get(text)
            if found is None and mbpp_tests:
                # RouterBench used the re-worded prompts of sanitized MBPP.
                nearest = difflib.get_close_matches(text, list(mbpp_tests), n=1, cutoff=CLOSE)
                if nearest:
                    found, close = mbpp_tests[nearest[0]], close + 1
            if found is None:
                unmatched += 1
            else:
                task = {**found, "bind_name": True}
                reference = "\n".join(found["test_list"])
        else:
            letters = _letters(prompt)
            task = {"letters": letters}
            chosen = Counter(
                extract_choice(responses[m] or "", letters) for m in models if verdicts[m]
            )
            chosen.pop(None, None)
            if len(chosen) == 1:
                reference = next(iter(chosen))
            else:
                unresolved += 1
        for model in models:
            outputs.append(
                SourceOutput(
                    question_id=row.sample_id,
                    question=prompt,
                    reference=reference,
                    model=model,
                    sample=0,
                    response=responses[model],
                    source_correct=verdicts[model],
                    cost_usd=row.costs[model],
                    error=None if responses[model] is not None else "empty output recorded",
                    task=task,
                )
            )
    notes = []
    if unresolved:
        notes.append(
            f"{path.name}: {unresolved} questions without a reconstructed reference letter "
            "(no response marked correct, or those marked correct chose different letters)"
        )
    if close:
        notes.append(
            f"{path.name}: {close} MBPP prompts joined to a task by close text (difflib ratio >= "
            f"{CLOSE}; RouterBench used re-worded prompts)"
        )
    if unmatched:
        notes.append(f"{path.name}: {unmatched} MBPP prompts not found in the MBPP file")
    files = [SourceFile(path=str(path), model=m) for m in models]
    return SourceImport(outputs, files, notes)
