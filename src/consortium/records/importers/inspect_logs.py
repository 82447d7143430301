"""Inspect AI logs (`inspect eval … --log-format eval|json`): one log per task run and model,
read with `inspect_ai.log.read_eval_log` (the schema of inspect-ai 0.3.285, the `inspect` extra).

Per sample and epoch (sample index = epoch - 1): the question is the sample's input (a string, or
its user messages' text joined), with its `choices` after it as `A. text` lines; the reference is
the target (the first of a list target; the letter for choice tasks); the response is
`output.completion`; tokens and cost come from the sample's `model_usage` (the log's model, or
all models summed where it is absent); the error from `sample.error` (or the limit that halted it).

The source verdict is the first scorer's value: Inspect's CORRECT "C", 1 and True are correct;
INCORRECT "I", NOANSWER "N", PARTIAL "P" (partial credit is not a correct answer), 0, False and
any other number below 1 are not; dict and list values and unknown words give none. `source_score`
keeps the value as Inspect's `value_to_float` maps it (C = 1, P = 0.5, I and N = 0). A log whose
status is not `success` keeps the samples it holds, with a note. `--model` renames the model."""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport, SourceOutput, text_or_none
from consortium.records.schema import SourceFile

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ModelUsage

INSTALL = "pip install 'consortium[inspect]'"
LETTERS = string.ascii_uppercase
CODES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""Inspect's CORRECT, INCORRECT, PARTIAL and NOANSWER values, as `value_to_float` maps them."""


def _load(path: Path) -> EvalLog:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise RecordsError(f"reading Inspect logs needs inspect-ai: {INSTALL}") from None
    if not path.is_file():
        raise RecordsError(f"source file not found: {path}")
    try:
        return read_eval_log(str(path), resolve_attachments=True)
    except Exception as error:  # its readers raise zip, JSON and validation errors alike
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise RecordsError(
            f"{path}: not an Inspect log ({type(error).__name__}: {first})"
        ) from None


def input_text(value: str | Iterable[Any]) -> str:
    """A sample's input as text: a string as it is, else its user messages' text joined."""
    if isinstance(value, str):
        return value
    messages = list(value)
    users = [m for m in messages if getattr(m, "role", None) == "user"] or messages
    return "\n\n".join(str(m.text) for m in users if str(m.text).strip())


def question_text(sample: EvalSample) -> str:
    text = input_text(sample.input)
    if sample.choices:
        options = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(sample.choices))
        text = f"{text}\n\n{options}"
    return text


def reference_of(target: str | list[str]) -> str | None:
    if isinstance(target, list):
        return text_or_none(target[0]) if target else None
    return text_or_none(target)


def score_float(value: Any) -> float | None:
    """A scalar score value as Inspect's `value_to_float` maps it; None for dicts, lists, None
    and words it does not know (Inspect warns and counts those 0)."""
    if isinstance(value, bool | int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    word = value.strip()
    if word in CODES:
        return CODES[word]
    if word.lower() in ("yes", "true", "no", "false"):
        return float(word.lower() in ("yes", "true"))
    try:
        return float(word)
    except ValueError:
        return None


def _usage(sample: EvalSample, model: str) -> ModelUsage | None:
    usage = sample.model_usage
    if not usage:
        return None
    if model in usage:
        return usage[model]
    total = None
    for each in usage.values():
        total = each if total is None else total + each
    return total


def _error(sample: EvalSample, response: str | None) -> str | None:
    if sample.error is not None:
        return text_or_none(sample.error.message) or "error recorded"
    if sample.limit is not None:
        return f"halted by its {sample.limit.type} limit"
    return None if response is not None else "empty output recorded"


def sample_output(sample: EvalSample, model: str, usage_model: str) -> SourceOutput:
    response = text_or_none(sample.output.completion)
    score = next(iter(sample.scores.values()), None) if sample.scores else None
    value = score_float(score.value) if score is not None else None
    usage = _usage(sample, usage_model)
    times = sample.working_time if sample.working_time is not None else sample.total_time
    return SourceOutput(
        question_id=str(sample.id),
        question=question_text(sample),
        reference=reference_of(sample.target),
        model=model,
        sample=max(sample.epoch - 1, 0),
        response=response,
        source_answer=text_or_none(score.answer) if score is not None else None,
        source_correct=None if value is None else value >= 1.0,
        source_score=value,
        tokens_in=usage.input_tokens if usage is not None else None,
        tokens_out=usage.output_tokens if usage is not None else None,
        cost_usd=usage.total_cost if usage is not None else None,
        latency_s=times,
        error=_error(sample, response),
        task={"letters": LETTERS[: len(sample.choices)]} if sample.choices else {},
    )


def _notes(path: Path, log: EvalLog, samples: list[EvalSample]) -> list[str]:
    notes = []
    if log.status != "success":
        reason = f": {log.error.message.splitlines()[0]}" if log.error and log.error.message else ""
        notes.append(
            f"{path.name}: Inspect log status {log.status}{reason}; its {len(samples)} recorded "
            "samples kept"
        )
    scorers = list(dict.fromkeys(name for s in samples for name in (s.scores or {})))
    if scorers:
        notes.append(
            f"{path.name}: source verdicts from Inspect scorer {scorers[0]!r} (C, 1 or True "
            "correct; I, N (no answer), P (partial) and numbers below 1 not)"
        )
    several = sum(isinstance(s.target, list) and len(s.target) > 1 for s in samples)
    if several:
        notes.append(f"{path.name}: {several} samples have several targets; the first is kept")
    return notes


def read_inspect_log(path: str | Path, model: str | None = None) -> SourceImport:
    """Every sample of one Inspect log; `model` overrides the log's own `eval.model`."""
    path = Path(path)
    log = _load(path)
    samples = list(log.samples or [])
    if not samples:
        raise RecordsError(f"{path}: the Inspect log holds no samples (status {log.status})")
    name = model or log.eval.model
    outputs = [sample_output(s, name, log.eval.model) for s in samples]
    note = f"Inspect task {log.eval.task}, model {log.eval.model}, status {log.status}"
    return SourceImport(
        outputs, [SourceFile(path=str(path), model=name, note=note)], _notes(path, log, samples)
    )
