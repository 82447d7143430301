"""A records folder → its outcome table, with the code checks run (and cached) where the answer
kind is code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from consortium.coord.answers.keys import agreement_for
from consortium.evaluation.recorded.outcomes import OutcomeTable, Verdicts, build_table
from consortium.records.errors import RecordsError
from consortium.records.store import Records
from consortium.tasks.code import extract_code
from consortium.tasks.code_checks import behaviour_key, check_all


def outcome_table(
    records: Records,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    verdicts: Verdicts = "ours",
) -> OutcomeTable:
    if records.manifest.protocol is not None:  # a later turn is no sample of the question alone
        raise RecordsError(
            f"{records.folder} holds a recorded {records.manifest.protocol.kind}: its turns are "
            "not samples of the question alone; measure it with consortium debates report"
        )
    kind = records.manifest.answer_kind
    if kind != "code":
        key, same = agreement_for(kind)
        return build_table(records, key, same, verdicts=verdicts)
    rows = records.table.select(["question_id", "question", "model", "sample", "response"])
    listed = rows.to_pylist()
    pairs = [(row["question"], row["response"] or "") for row in listed]
    cache = None if cache_dir is None else cache_dir / f"{records.manifest.dataset}-checks.json"
    results = check_all(pairs, cache, progress=progress)
    checks = {}
    signatures = {}
    for row, (prompt, response) in zip(listed, pairs, strict=True):
        result = results[(prompt, extract_code(response))]
        checks[(row["question_id"], row["model"], row["sample"])] = result.passed
        # agreement is within a question; the prompt keeps equal programs of two tasks apart
        signatures[_program_key(prompt, response)] = result.signature
    return build_table(records, _code_key(records, signatures), None, checks, verdicts)


def _program_key(prompt: str, response: str) -> str:
    return f"{prompt}\x00{extract_code(response)}"


def _code_key(records: Records, signatures: dict[str, str]) -> Callable[[str], str | None]:
    """Code answers agree when they behave the same on the examples; the table's `answer` column
    holds the extracted program, looked up with its question's prompt."""
    by_answer: dict[str, str] = {}
    for row in records.table.select(["question", "answer", "response"]).to_pylist():
        if row["answer"] is not None:
            signature = signatures.get(_program_key(row["question"], row["response"] or ""))
            found = None if signature is None else behaviour_key(signature, row["answer"])
            if found is not None:
                by_answer[row["answer"]] = found
    return lambda answer: by_answer.get(answer)
