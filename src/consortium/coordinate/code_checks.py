"""The code Verifier's check and the code answers' agreement: run a candidate program on the
examples written in its task's docstring (never the hidden tests) in the sandbox. A program passes
when every example gives the documented value; its behaviour signature (what each example
returned) decides which programs agree."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from consortium.coordinate.docstring_examples import docstring_examples
from consortium.sandbox.runner import Sandbox
from consortium.tasks.code import entry_point, extract_code

_MARK = "@@examples@@"


@dataclass(frozen=True, slots=True)
class CheckResult:
    passed: bool
    """Every docstring example gave its documented value (False with no examples run)."""
    signature: str
    """What each example returned (or raised), as text: equal signatures agree."""


def check_program(prompt: str, code: str) -> str:
    """The program the sandbox runs: the candidate (with the prompt's imports, or the prompt plus
    the completion), then each example, printing what it returned and whether it matched."""
    name = entry_point(prompt)
    if name is None:  # a task in words (MBPP style): the program alone, with no example to run
        body = code
    elif re.search(rf"^\s*def\s+{re.escape(name)}\s*\(", code, re.MULTILINE):
        imports = [line for line in prompt.splitlines() if line.startswith(("import ", "from "))]
        body = "\n".join(imports) + "\n" + code
    else:
        body = prompt + code
    examples = json.dumps(docstring_examples(prompt))
    runner = f"""
import json as _json
_results = []
for _call, _expected in _json.loads({examples!r}):
    try:
        _got = eval(_call)
    except Exception as _error:
        _results.append(["<" + type(_error).__name__ + ">", False])
        continue
    try:
        _ok = bool(_got == eval(_expected))
    except Exception:
        _ok = False
    _results.append([repr(_got)[:200], _ok])
print({_MARK!r} + _json.dumps(_results))
"""
    return body + "\n" + runner


def _run_check(sandbox: Sandbox, program: str) -> CheckResult:
    result = sandbox.run_python(program)
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(_MARK):
            outcomes = json.loads(line[len(_MARK) :])
            passed = bool(outcomes) and all(ok for _, ok in outcomes)
            return CheckResult(passed, json.dumps([got for got, _ in outcomes]))
    return CheckResult(False, "<failed to run>")


def check_all(
    pairs: Iterable[tuple[str, str]],
    cache: Path | None = None,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> dict[tuple[str, str], CheckResult]:
    """Check every (prompt, response) pair once; results are cached by content in `cache` (a JSON
    file), so a second run of a report spends no sandbox time."""
    stored: dict[str, list[object]] = {}
    if cache is not None and cache.is_file():
        stored = json.loads(cache.read_text(encoding="utf-8"))
    unique = {(prompt, extract_code(response)) for prompt, response in pairs}
    # keyed by the program the sandbox runs, so a change in how examples are read is a miss
    programs = {pair: check_program(*pair) for pair in unique}
    digests = {
        pair: hashlib.sha256(program.encode()).hexdigest() for pair, program in programs.items()
    }
    todo = [pair for pair in unique if digests[pair] not in stored]
    sandbox = Sandbox()
    done = 0

    def one(pair: tuple[str, str]) -> tuple[str, CheckResult]:
        nonlocal done
        checked = _run_check(sandbox, programs[pair])
        done += 1
        if progress is not None and (done % 100 == 0 or done == len(todo)):
            progress(done, len(todo))
        return digests[pair], checked

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for digest, checked in pool.map(one, todo):
            stored[digest] = [checked.passed, checked.signature]
    if cache is not None and todo:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(stored), encoding="utf-8")
    return {
        pair: CheckResult(bool(stored[digests[pair]][0]), str(stored[digests[pair]][1]))
        for pair in unique
    }
