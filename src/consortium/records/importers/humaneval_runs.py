"""HumanEval-runs layout (jamesmurdza/humaneval-results `<model>/<N>.md`): one Markdown file per
task with the prompt (and its token count), the canonical solution, the unit tests and ten
`### ✅|❌ Run k` sections (start time, duration, completion tokens, Pass/Fail, the code)."""

from __future__ import annotations

import re
from pathlib import Path

from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport, SourceOutput
from consortium.records.schema import SourceFile
from consortium.tasks.code import entry_point

_HEADER_MODEL = re.compile(r"^Model:\s*(.+?)(?:<br\s*/>)?\s*$", re.MULTILINE)
_SECTION = re.compile(r"^## (Prompt|Correct solution|Unit tests|Runs)\s*$", re.MULTILINE)
_FIRST_BLOCK = re.compile(r"```python\n(.*?)\n```", re.DOTALL)
_PROMPT_TOKENS = re.compile(r"^Tokens:\s*(\d+)", re.MULTILINE)
_RUN = re.compile(r"^### (?:✅|❌) Run (\d+)\s*$", re.MULTILINE)
_DURATION = re.compile(r"^Duration:\s*([\d.]+)s", re.MULTILINE)
_COMPLETION = re.compile(r"^Completion tokens:\s*(\d+)", re.MULTILINE)
_RESULT = re.compile(r"^Result:\s*(Pass|Fail)", re.MULTILINE)


def _sections(text: str, path: Path) -> dict[str, str]:
    marks = list(_SECTION.finditer(text))
    found = {
        mark.group(1): text[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)]
        for i, mark in enumerate(marks)
    }
    missing = {"Prompt", "Unit tests", "Runs"} - set(found)
    if missing:
        raise RecordsError(f"{path}: no '## {sorted(missing)[0]}' section")
    return found


def _block(section: str, path: Path, what: str) -> str:
    found = _FIRST_BLOCK.search(section)
    if found is None:
        raise RecordsError(f"{path}: no python block in {what}")
    return found.group(1)


def _run_code(body: str) -> str:
    """The code of a run: everything between its first ```python line and its last ``` line (a
    model's own nested fence stays inside, as recorded)."""
    start = body.find("```python\n")
    end = body.rstrip().rfind("```")
    if start < 0 or end <= start:
        return ""
    return body[start + len("```python\n") : end].rstrip("\n")


def read_task(path: Path, model: str | None) -> list[SourceOutput]:
    text = path.read_text(encoding="utf-8")
    number = path.stem
    if not number.isdigit():
        raise RecordsError(f"{path}: expected a file named <N>.md for HumanEval/N")
    sections = _sections(text, path)
    prompt = _block(sections["Prompt"], path, "## Prompt")
    tests = _block(sections["Unit tests"], path, "## Unit tests")
    function = entry_point(prompt)
    if function is None:
        raise RecordsError(f"{path}: no function in the prompt")
    name = model or (_HEADER_MODEL.search(text) or [None, path.parent.name])[1]
    prompt_tokens = _PROMPT_TOKENS.search(sections["Prompt"])
    task = {"format": "humaneval", "prompt": prompt + "\n", "test": tests, "entry_point": function}
    runs = list(_RUN.finditer(sections["Runs"]))
    outputs = []
    for i, run in enumerate(runs):
        body = sections["Runs"][run.end() : runs[i + 1].start() if i + 1 < len(runs) else None]
        duration, completion, result = (
            pattern.search(body) for pattern in (_DURATION, _COMPLETION, _RESULT)
        )
        code = _run_code(body)
        outputs.append(
            SourceOutput(
                question_id=f"HumanEval/{number}",
                question=prompt + "\n",
                reference=tests,
                model=str(name),
                sample=int(run.group(1)) - 1,
                response=code or None,
                source_correct=None if result is None else result.group(1) == "Pass",
                tokens_in=int(prompt_tokens.group(1)) if prompt_tokens else None,
                tokens_out=int(completion.group(1)) if completion else None,
                latency_s=float(duration.group(1)) if duration else None,
                error=None if code else "no code recorded",
                task=task,
            )
        )
    return outputs


def read_humaneval_runs(folder: str | Path, model: str | None = None) -> SourceImport:
    folder = Path(folder)
    if not folder.is_dir():
        raise RecordsError(f"humaneval-runs folder not found: {folder}")
    files = sorted(folder.glob("*.md"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise RecordsError(f"{folder}: no <N>.md files")
    outputs = [output for path in files for output in read_task(path, model)]
    name = model or outputs[0].model
    note = f"{len(files)} task files; prompt and completion token counts as recorded"
    return SourceImport(outputs, [SourceFile(path=str(folder), model=name, note=note)])
