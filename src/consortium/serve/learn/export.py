"""Labelled traffic as a records folder: one question per labelled request (its id the response
id, so the train / held-out split is the records' hash split of the response id), one row per
recorded call, each sample graded by the request's label (`labels.verdicts`).

Only requests with a sample of every pool model enter: a request the policy answered alone, and
that was not explored, says nothing of what the other models would have answered (counting them
wrong there would teach the refit to keep the serving policy)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consortium.coord.answers.folder import AnswerPolicy
from consortium.records.grading import GRADER_NAMES
from consortium.records.rows import OutputRow
from consortium.records.schema import SCHEMA_VERSION, Manifest
from consortium.records.split import split_rule
from consortium.records.store import Records, write_records
from consortium.serve.learn.labels import answer_of, verdicts
from consortium.serve.learn.store import Label

DATASET = "served"
"""The data set name of exported traffic: with the response id, what the split hashes."""


def _rows(
    policy: AnswerPolicy, request: dict[str, Any], label: Label, calls: list[dict[str, Any]]
) -> list[OutputRow]:
    kind = policy.answer_kind
    question = str(request["question"])
    judged = verdicts(
        kind, label, question, request["answer"], [call["response"] for call in calls]
    )
    return [
        OutputRow(
            question_id=str(request["response_id"]),
            question=question,
            reference=label.reference,
            model=str(call["model"]),
            sample=int(call["sample"]),
            response=call["response"],
            answer=answer_of(kind, call["response"]),
            correct=verdict,
            source_correct=None,
            tokens_in=int(call["tokens_in"]),
            tokens_out=int(call["tokens_out"]),
            tokens_estimated=False,
            cost_usd=float(call["cost_usd"]),
            cost_estimated=False,
            latency_s=call["latency_s"],
            error=call["error"],
        )
        for call, verdict in zip(calls, judged, strict=True)
    ]


def export_labelled(
    folder: Path,
    labelled: Sequence[tuple[dict[str, Any], Label, list[dict[str, Any]]]],
    policy: AnswerPolicy,
    models: Sequence[str],
) -> Records | None:
    """The labelled requests that asked every one of `models` (a failed call included: it is no
    sample), as a records folder; None when there is none."""
    rows: list[OutputRow] = []
    questions = 0
    for request, label, calls in labelled:
        unique = _first_of_each(calls)
        if not set(models) <= {call["model"] for call in unique}:
            continue
        # a failed call asked the model and got nothing: no sample, as in a records folder
        kept = [call for call in unique if call["model"] in models and not call["error"]]
        rows.extend(_rows(policy, request, label, kept))
        questions += 1
    if not questions:
        return None
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        dataset=DATASET,
        answer_kind=policy.answer_kind,
        sources=[],
        licence="the served traffic of this server",
        grader=GRADER_NAMES[policy.answer_kind]
        + " for references; a verdict on the served answer labels the samples that agree with it",
        split=split_rule(),
        prices={m: p for m, p in policy.prices.items() if m in models},
        models=list(models),
        questions=questions,
        notes=["served traffic: one question per labelled request with a sample of every model"],
        created_by="consortium serve --learn",
    )
    return write_records(folder, manifest, rows)


def _first_of_each(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, sample): the first recorded (a shadow call never repeats one)."""
    seen: set[tuple[str, int]] = set()
    kept = []
    for call in calls:
        address = (call["model"], call["sample"])
        if address not in seen:
            seen.add(address)
            kept.append(call)
    return kept
