"""Join imported source files into one data set: one reference per question, our graders'
verdicts beside the source's, token counts and costs (recorded, or declared estimates)."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from consortium.records.grading import GRADER_NAMES, CodeVerdicts, Verdict, grade_math, grade_text
from consortium.records.importers.base import SourceImport, SourceOutput
from consortium.records.prices import LIST_PRICES, PRICE_NOTE, cost_of, tokens_of
from consortium.records.rows import OutputRow, question_order
from consortium.records.schema import SCHEMA_VERSION, AnswerKind, Manifest, Price, Source
from consortium.records.split import split_rule
from consortium.sandbox.runner import Sandbox, SandboxLimits
from consortium.sandbox.session import RunsPython, ThreadSessions

Progress = Callable[[int, int], None]
IMPORT_LIMITS = SandboxLimits(cpu_seconds=SandboxLimits().cpu_seconds, wall_seconds=60.0)
"""Per program graded during an import: the CPU limit of the live grader (`tasks.code.CodeGrader`
on the default sandbox, 10 s), so that an import and `eval` over the replay give a program the
same verdict. At 5 s (HumanEval's own harness allows 3 s) gpt-3.5's answer to RouterBench's
mbpp.dev.71, which needs about 5 s of CPU, passed or failed with how busy the machine was. The
CPU limit decides: a wall limit near it made a verdict depend on load too (gpt-4's exhaustive
search for HumanEval/129 takes 2.4 s of CPU, and timed out on the wall clock of a loaded import).
The wall limit only stops a program that waits without computing (none of the recorded ones
does; one that did would cost 60 s)."""
PROGRAM_LIMITS = SandboxLimits(cpu_seconds=1, wall_seconds=60.0)
"""Per program-of-thought sample (arithmetic that prints `ans`): the slowest recorded one that
finishes needs well under 0.1 s of CPU, and those that loop (32 of GSM8K's) were a third of a
fresh import's time at 5 s each; verdicts are the same at 1 s."""

LIMITED = "limited to the first "
"""How the notes of a data set imported with a question limit begin."""


@dataclass
class Part:
    """One imported file (or folder) and where it came from."""

    imported: SourceImport
    repo: str
    commit: str
    root: Path
    """The data folder paths are given relative to, in the manifest."""


def _same_reference(kind: AnswerKind, first: str, second: str) -> bool:
    if kind == "number":
        try:
            return float(first.replace(",", "")) == float(second.replace(",", ""))
        except ValueError:
            pass
    return first.strip() == second.strip()


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return os.path.basename(path)


@contextmanager
def _stray_alarms_ignored() -> Iterator[None]:
    """math-verify times its parsing with SIGALRM; an alarm that fires after it restored the
    default handler would end the process silently (seen on a loaded machine), so an import
    holds a handler that ignores alarms nobody is waiting for."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, previous)


def _program_answer(sandbox: RunsPython, code: str) -> str | None:
    """Run a program-of-thought sample in the sandbox; its `ans`, printed, is the answer."""
    result = sandbox.run_python(f"{code}\n\nprint(ans)\n")
    if not result.ok:
        return None
    lines = result.stdout.strip().splitlines()
    return lines[-1].strip() if lines else None


def _verdicts(
    kind: AnswerKind,
    outputs: list[SourceOutput],
    references: dict[str, str | None],
    progress: Progress | None,
    workers: int,
) -> list[Verdict]:
    sandbox = ThreadSessions(Sandbox(IMPORT_LIMITS if kind == "code" else PROGRAM_LIMITS))
    code = CodeVerdicts(sandbox)
    total = len(outputs)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % 200 == 0 or done == total):
            progress(done, total)

    # Sandbox runs (code, programs) go to threads, a sandbox session each; math-verify stays on
    # this thread, where its timeouts (SIGALRM) work.
    def sandboxed(output: SourceOutput) -> Verdict | str | None:
        if kind == "code":
            return code.grade(output.task, output.response)
        return _program_answer(sandbox, output.response or "")

    needs_sandbox = [kind == "code" or (o.program and o.response is not None) for o in outputs]
    with sandbox, ThreadPoolExecutor(max_workers=workers) as pool:
        # One run per distinct (program, tests): repeated samples are often identical.
        runs: dict[tuple[str | None, str], Future[Verdict | str | None]] = {}
        futures: dict[int, Future[Verdict | str | None]] = {}
        for i, output in enumerate(outputs):
            if needs_sandbox[i]:
                run = (output.response, json.dumps(output.task, sort_keys=True))
                if run not in runs:
                    runs[run] = pool.submit(sandboxed, output)
                futures[i] = runs[run]
        verdicts: list[Verdict] = []
        cache: dict[tuple[str | None, str | None, str, str | None], Verdict] = {}
        for i, output in enumerate(outputs):
            reference = references[output.question_id]
            if kind == "code":
                result = futures[i].result()
                assert isinstance(result, Verdict)
                verdicts.append(result)
            elif output.program:
                answer = futures[i].result() if i in futures else None
                assert answer is None or isinstance(answer, str)
                verdicts.append(replace(grade_math(reference, answer), answer=answer))
            else:
                letters = output.task.get("letters")
                key = (reference, output.response, output.question, letters)
                if key not in cache:
                    cache[key] = grade_text(
                        kind, reference, output.response, question=output.question, letters=letters
                    )
                verdicts.append(cache[key])
            tick()
    return verdicts


@dataclass
class _Joined:
    """The parts' outputs joined: one text and one reference per question, each output once,
    and the notes declared so far (the parts' own, and every differing reference)."""

    questions: dict[str, str]
    references: dict[str, str | None]
    outputs: list[SourceOutput]
    declared: list[str]

    def limit_to(self, limit: int) -> None:
        """Keep the first `limit` questions by id, and say so."""
        first = set(sorted(self.questions, key=question_order)[:limit])
        self.questions = {q: text for q, text in self.questions.items() if q in first}
        self.outputs = [o for o in self.outputs if o.question_id in first]
        self.declared.append(f"{LIMITED}{limit} questions (by id)")


def _join(kind: AnswerKind, parts: Sequence[Part], notes: Sequence[str]) -> _Joined:
    joined = _Joined(questions={}, references={}, outputs=[], declared=list(notes))
    questions, references, declared = joined.questions, joined.references, joined.declared
    seen: set[tuple[str, str, int]] = set()
    for part in parts:
        declared += part.imported.notes
        for output in part.imported.outputs:
            key = (output.question_id, output.model, output.sample)
            if key in seen:
                continue
            seen.add(key)
            if output.question_id not in questions:
                questions[output.question_id] = output.question
                references[output.question_id] = output.reference
            elif references[output.question_id] is None:
                references[output.question_id] = output.reference
            else:
                kept = references[output.question_id]
                if (
                    output.reference is not None
                    and kept is not None
                    and not _same_reference(kind, kept, output.reference)
                ):
                    note = (
                        f"question {output.question_id}: {output.model}'s source has gold "
                        f"{output.reference!r}, the reference kept is {kept!r}"
                    )
                    if note not in declared:
                        declared.append(note)
            joined.outputs.append(replace(output, question=questions[output.question_id]))
    return joined


def _row(
    output: SourceOutput,
    verdict: Verdict,
    reference: str | None,
    prices: dict[str, Price],
    unpriced: set[str],
) -> OutputRow:
    """One output as a row: tokens estimated where the source has none, cost from the declared
    price where the source has none (a model without one is added to `unpriced`, at cost 0)."""
    tokens_in = output.tokens_in
    tokens_out = output.tokens_out
    estimated = tokens_in is None or tokens_out is None
    tokens_in = tokens_in if tokens_in is not None else tokens_of(output.question)
    tokens_out = tokens_out if tokens_out is not None else tokens_of(output.response)
    cost = output.cost_usd
    if cost is None:
        price = prices.get(output.model)
        if price is None:
            unpriced.add(output.model)
        cost = cost_of(price, tokens_in, tokens_out) if price else 0.0
    return OutputRow(
        question_id=output.question_id,
        question=output.question,
        reference=reference,
        model=output.model,
        sample=output.sample,
        response=output.response,
        answer=verdict.answer,
        correct=verdict.correct,
        source_correct=output.source_correct,
        source_score=output.source_score,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_estimated=estimated,
        cost_usd=cost,
        cost_estimated=output.cost_usd is None,
        latency_s=output.latency_s,
        error=output.error,
        turn=output.turn,
        seen=output.seen,
        source_answer=output.source_answer if output.turn is not None else None,
    )


def _estimate_notes(
    kind: AnswerKind, outputs: list[SourceOutput], priced: bool, unpriced: set[str]
) -> list[str]:
    """What the data set estimates or declares: tokens, the sandbox's limits, prices."""
    notes = []
    if any(o.tokens_in is None for o in outputs):
        notes.append(
            "tokens not recorded by the source are estimated (consortium.core.tokens: one token "
            "per 4 characters) from the question text and the response as stored; the real "
            "prompts (few-shot examples, instructions) were longer, so input tokens and costs are "
            "underestimates"
        )
    if kind == "code" or any(o.program for o in outputs):
        limits = IMPORT_LIMITS if kind == "code" else PROGRAM_LIMITS
        notes.append(
            f"programs run in the sandbox with {limits.cpu_seconds} s CPU and "
            f"{limits.wall_seconds:g} s wall time each"
        )
    if priced:
        notes.append(PRICE_NOTE)
    if unpriced:
        notes.append(f"no price declared for {', '.join(sorted(unpriced))}: cost 0")
    return notes


def _sources(parts: Sequence[Part]) -> list[Source]:
    """One source per repository and commit, with its files relative to the part's root."""
    sources: dict[tuple[str, str], Source] = {}
    for part in parts:
        source = sources.setdefault(
            (part.repo, part.commit), Source(repo=part.repo, commit=part.commit, files=[])
        )
        source.files += [
            file.model_copy(update={"path": _relative(file.path, part.root)})
            for file in part.imported.files
        ]
    return list(sources.values())


def build_dataset(
    dataset: str,
    kind: AnswerKind,
    parts: Sequence[Part],
    *,
    licence: str,
    created_by: str,
    notes: Sequence[str] = (),
    prices: dict[str, Price] | None = None,
    progress: Progress | None = None,
    workers: int = 2,
    limit: int | None = None,
) -> tuple[Manifest, list[OutputRow]]:
    """The rows and manifest of one data set. The first part that has a question gives its text
    and reference; a later part's differing reference is noted (its own verdict is kept as the
    source's, ours uses the one reference)."""
    prices = LIST_PRICES if prices is None else prices
    joined = _join(kind, parts, notes)
    if limit is not None:
        joined.limit_to(limit)
    outputs, references = joined.outputs, joined.references
    with _stray_alarms_ignored():
        verdicts = _verdicts(kind, outputs, references, progress, workers)
    models = list(dict.fromkeys(o.model for o in outputs))
    used_prices = {m: prices[m] for m in models if m in prices}
    unpriced: set[str] = set()
    rows = [
        _row(output, verdict, references[output.question_id], used_prices, unpriced)
        for output, verdict in zip(outputs, verdicts, strict=True)
    ]
    declared = joined.declared + _estimate_notes(kind, outputs, bool(used_prices), unpriced)
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        dataset=dataset,
        answer_kind=kind,
        sources=_sources(parts),
        licence=licence,
        grader=GRADER_NAMES[kind],
        split=split_rule(),
        prices=used_prices,
        models=models,
        questions=len(joined.questions),
        notes=declared,
        created_by=created_by,
        binds_tested_name=any(o.task.get("bind_name") for o in outputs) or None,
    )
    return manifest, rows
