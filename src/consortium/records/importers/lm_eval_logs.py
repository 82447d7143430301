"""lm-evaluation-harness sample logs (`lm-eval run … --output_path DIR --log_samples`), in the
schema lm-eval 0.4.13 writes (`EvaluationTracker.save_results_samples`): a JSON-lines file
`DIR/<model>/samples_<task>_<date>.jsonl` with one row per document and filter, holding `doc_id`,
`doc`, `target` (as text), `arguments` (`{"gen_args_<i>": {"arg_<j>": …}}`, one per request: the
prompt, then the generation kwargs or the scored continuation), `resps` and `filtered_resps`
(all values as text), `filter`, `metrics` (the metric names) and each metric's value; and beside
it `results_<date>.json` (`EvaluationTracker.save_results_aggregated`), whose `config.model_args`
names the model (`pretrained=`, `model=`, … as lm-eval reads it) and `configs.<task>.output_type`
the kind of task. No lm-eval code is needed to read them.

The question is the request's prompt (`arg_0`, few-shot examples included), else a question-like
field of the doc. `generate_until`: the response is each repeat's raw generation (`resps[0][k]`,
sample k), the source answer the filtered one. `multiple_choice`: the prompt is followed by the
scored continuations as `A. text` lines (unless the continuations are the letters themselves, as
in MMLU, whose prompt lists the options), the response is the letter of the continuation with the
highest log-likelihood (as lm-eval's `acc` picks it, the first of ties) and the reference the gold
index's letter. The source verdict is the row's first metric whose value is 0 or 1 (`acc`,
`exact_match`, …); with several repeats it grades them together, so none is kept. A file with
several filters keeps one (`method`, else the first). Tokens are not recorded."""

from __future__ import annotations

import ast
import json
import string
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import (
    SourceImport,
    SourceOutput,
    read_json,
    read_jsonl,
    text_or_none,
)
from consortium.records.schema import SourceFile

LETTERS = string.ascii_uppercase
MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")
"""lm-eval's own order (`GeneralConfigTracker._get_model_name`): an adapter before its base."""
QUESTION_FIELDS = ("question", "query", "problem", "input", "prompt", "text", "sentence", "goal")
SUPPORTED = ("generate_until", "multiple_choice")
NOT_METRICS = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}
"""A row's fields that are not metric values (rows without a `metrics` list)."""


def task_and_date(path: Path) -> tuple[str, str]:
    """`samples_<task>_<date>.jsonl` -> (task, date), as lm_eval.utils splits the name."""
    name = path.name.removesuffix(".jsonl")
    if not name.startswith("samples_") or name.count("_") < 2:
        raise RecordsError(f"{path}: not an lm-eval samples file (samples_<task>_<date>.jsonl)")
    return name[name.find("_") + 1 : name.rfind("_")], name[name.rfind("_") + 1 :]


def results_file(path: Path, date: str) -> Path | None:
    """The run's results JSON: `results_<date>.json` beside the samples (or `<stem>_<date>.json`
    where `--output_path` named a .json file)."""
    exact = path.parent / f"results_{date}.json"
    if exact.is_file():
        return exact
    same_run = sorted(path.parent.glob(f"*_{date}.json"))
    return same_run[0] if same_run else None


def model_from_args(model_args: Any) -> str | None:
    if isinstance(model_args, dict):
        for key in MODEL_KEYS:
            if model_args.get(key):
                return str(model_args[key])
    elif isinstance(model_args, str):
        for key in MODEL_KEYS:
            if f"{key}=" in model_args:
                return model_args.split(f"{key}=")[1].split(",")[0] or None
    return None


def _arguments(row: dict[str, Any]) -> list[list[Any]]:
    """The requests' arguments: the written `{"gen_args_i": {"arg_j": …}}` or in-memory lists."""
    arguments = row.get("arguments")
    if isinstance(arguments, dict):
        ordered = sorted(arguments.items(), key=lambda item: int(item[0].rsplit("_", 1)[-1]))
        return [
            [args[k] for k in sorted(args, key=lambda k: int(k.rsplit("_", 1)[-1]))]
            for _, args in ordered
        ]
    if isinstance(arguments, list):
        return [list(args) for args in arguments]
    return []


def _doc_question(doc: Any) -> str:
    if isinstance(doc, dict):
        for key in QUESTION_FIELDS:
            if isinstance(doc.get(key), str) and doc[key].strip():
                return str(doc[key])
    return json.dumps(doc, ensure_ascii=False)


def _output_type(row: dict[str, Any], arguments: list[list[Any]], declared: str | None) -> str:
    if declared:
        return declared
    if len(arguments) == 1 and len(arguments[0]) > 1 and isinstance(arguments[0][1], dict):
        return "generate_until"
    if len(arguments) > 1 and all(len(a) > 1 and isinstance(a[1], str) for a in arguments):
        return "multiple_choice"
    return "unknown"


def _loglikelihood(value: Any) -> float:
    """A filtered loglikelihood response: `["-2.3", "False"]` as written (tuples become lists of
    text), or the tuple's text."""
    if isinstance(value, str):
        value = ast.literal_eval(value) if value.startswith("(") else [value]
    if isinstance(value, list | tuple) and value:
        return float(value[0])
    return float(value)


def _gold_index(target: Any, continuations: list[str]) -> int | None:
    """The gold option: a JSON integer target is lm-eval's index; a text target is first
    matched against the options' texts (options "3" / "4" / "5": the target "3" is "3", not the
    fourth), then read as an index."""
    if isinstance(target, int) and not isinstance(target, bool):
        return target if 0 <= target < len(continuations) else None
    text = str(target).strip()
    stripped = [c.strip() for c in continuations]
    if stripped.count(text) == 1:
        return stripped.index(text)
    if text.lstrip("-").isdigit() and 0 <= int(text) < len(continuations):
        return int(text)
    return None


def _verdict(row: dict[str, Any]) -> tuple[bool | None, float | None]:
    names = row.get("metrics") or [k for k in row if k not in NOT_METRICS]
    for name in names:
        value = row.get(name)
        if isinstance(value, bool | int | float) and float(value) in (0.0, 1.0):
            return bool(value), float(value)
    return None, None


def _gold_text(target: Any) -> str | None:
    """The target as text; a GSM8K-style worked solution keeps its final `#### answer`."""
    text = text_or_none(target)
    if text is not None and "####" in text:
        return text.rsplit("####", 1)[1].strip() or text
    return text


def generate_outputs(row: dict[str, Any], question: str, model: str) -> list[SourceOutput]:
    resps = row.get("resps") or [[]]
    generations = resps[0] if isinstance(resps[0], list) else [resps[0]]
    filtered = (row.get("filtered_resps") or [None])[0]
    correct, score = _verdict(row) if len(generations) <= 1 else (None, None)
    answers = filtered if isinstance(filtered, list) else [filtered] * len(generations)
    outputs = []
    for sample, generation in enumerate(generations or [None]):
        response = text_or_none(generation)
        outputs.append(
            SourceOutput(
                question_id=str(row["doc_id"]),
                question=question,
                reference=_gold_text(row.get("target")),
                model=model,
                sample=sample,
                response=response,
                source_answer=text_or_none(answers[sample]) if sample < len(answers) else None,
                source_correct=correct,
                source_score=score,
                error=None if response is not None else "empty output recorded",
            )
        )
    return outputs


def choice_output(
    row: dict[str, Any], arguments: list[list[Any]], prompt: str, model: str
) -> SourceOutput:
    continuations = [str(a[1]) for a in arguments]
    letters = LETTERS[: len(continuations)]
    if [c.strip() for c in continuations] == list(letters):
        question = prompt  # the prompt lists the options (MMLU style)
    else:
        options = "\n".join(f"{letters[i]}. {c.strip()}" for i, c in enumerate(continuations))
        question = f"{prompt.rstrip()}\n\n{options}"
    scores = [_loglikelihood(v) for v in row.get("filtered_resps") or []]
    best = letters[max(range(len(scores)), key=lambda i: scores[i])] if scores else None
    gold = _gold_index(row.get("target", ""), continuations)
    correct, score = _verdict(row)
    return SourceOutput(
        question_id=str(row["doc_id"]),
        question=question,
        reference=None if gold is None else letters[gold],
        model=model,
        sample=0,
        response=best,
        source_answer=best,
        source_correct=correct,
        source_score=score,
        error=None if best is not None else "no log-likelihoods recorded",
        task={"letters": letters},
    )


def _model_and_type(
    path: Path, task: str, date: str, model: str | None
) -> tuple[str, str | None, Path | None]:
    found = results_file(path, date)
    results = read_json(found) if found is not None else {}
    named = model or model_from_args((results.get("config") or {}).get("model_args"))
    if not named:
        where = f"{found.name} names no model" if found else f"no results_{date}.json beside it"
        raise RecordsError(f"{path}: {where}; give the model name (--model)")
    config = (results.get("configs") or {}).get(task) or {}
    return named, config.get("output_type"), found


def _chosen_filter(path: Path, rows: list[dict[str, Any]], wanted: str) -> tuple[str, list[str]]:
    filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in rows))
    if wanted and wanted not in filters:
        raise RecordsError(f"{path}: no filter {wanted!r}; its filters: {', '.join(filters)}")
    return (wanted or filters[0]), filters


def read_lm_eval(path: str | Path, model: str | None = None, method: str = "") -> SourceImport:
    """One task's samples file; `model` overrides the results file's model, `method` picks the
    filter (e.g. gsm8k's `strict-match` or `flexible-extract`)."""
    path = Path(path)
    task, date = task_and_date(path)
    rows = read_jsonl(path)
    if not rows:
        raise RecordsError(f"{path}: no samples")
    name, declared, found = _model_and_type(path, task, date, model)
    chosen, filters = _chosen_filter(path, rows, method)
    outputs: list[SourceOutput] = []
    repeats = 0
    for row in rows:
        if str(row.get("filter", "none")) != chosen:
            continue
        if "doc_id" not in row:
            raise RecordsError(f"{path}: a row lacks doc_id")
        arguments = _arguments(row)
        first = arguments[0][0] if arguments and arguments[0] else None
        prompt = (
            first if isinstance(first, str) and first.strip() else _doc_question(row.get("doc"))
        )
        kind = _output_type(row, arguments, declared)
        if kind == "multiple_choice":
            outputs.append(choice_output(row, arguments, prompt, name))
        elif kind == "generate_until":
            produced = generate_outputs(row, prompt, name)
            repeats += len(produced) > 1
            outputs += produced
        else:
            raise RecordsError(
                f"{path}: output type {kind!r} is not read (only {', '.join(SUPPORTED)})"
            )
    notes = [f"{path.name}: lm-eval task {task}, filter {chosen!r}; the question is the prompt"]
    if len(filters) > 1:
        notes.append(f"{path.name}: filters {', '.join(f for f in filters if f != chosen)} skipped")
    no_gold = sum(o.reference is None for o in outputs)
    if no_gold:
        notes.append(f"{path.name}: {no_gold} outputs without a reference (target not read)")
    if repeats:
        notes.append(
            f"{path.name}: {repeats} documents have several repeats; their metric grades the "
            "repeats together, so no source verdict is kept for them"
        )
    files = [SourceFile(path=str(path), model=name, note=f"lm-eval {task}, filter {chosen}")]
    if found is not None:
        files.append(SourceFile(path=str(found), model=name, note="lm-eval results (model name)"))
    return SourceImport(outputs, files, notes)
