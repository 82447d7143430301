"""The code Verifier's check and the code answers' agreement: run a candidate program on the
examples written in its task's docstring (never the hidden tests) in the sandbox. A program passes
when every example gives the documented value; its behaviour signature (what each example and
each probe call returned, consortium.tasks.probes) decides which programs agree."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from consortium.sandbox.runner import Sandbox
from consortium.sandbox.session import RunsPython, ThreadSessions, shared_sessions
from consortium.tasks.code import entry_point, extract_code
from consortium.tasks.docstring_examples import docstring_examples
from consortium.tasks.probes import probe_calls, varied_calls

_MARK = "@@examples@@"
_PROBE_MARK = "@@probes@@"
PROBE_CPU_SECONDS = 0.5
"""CPU time one probe call may take before it counts as `<TimeoutError>`."""
PROBES_CPU_SECONDS = 3.0
"""CPU time all probes of a program may take; later probes count as `<skipped>`."""
FAILED_TO_RUN = "<failed to run>"
"""The signature of a program whose examples' line never came back (it did not run)."""
NO_EXAMPLES = "[]"
"""The signature where the prompt has no docstring example to run."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    passed: bool
    """Every docstring example gave its documented value (False with no examples run)."""
    signature: str
    """What each example and probe returned (or raised), as text: equal signatures agree."""


@dataclass(frozen=True, slots=True)
class ExampleCoverage:
    """How many of a code data set's tasks the check can work on."""

    tasks: int
    with_examples: int
    """Tasks whose prompt has docstring examples (the check runs them)."""
    with_probes: int
    """Tasks that also get probe calls (agreement beyond the examples)."""

    def text(self) -> str:
        without = self.tasks - self.with_examples
        return (
            f"docstring examples in {self.with_examples} of {self.tasks} tasks ({self.with_probes} "
            f"with probe calls); on the other {without} no program passes its check and only "
            "identical programs agree"
        )


def example_coverage(prompts: Iterable[str]) -> ExampleCoverage:
    unique = set(prompts)
    with_examples = [prompt for prompt in unique if docstring_examples(prompt)]
    with_probes = [prompt for prompt in with_examples if probe_calls(prompt)]
    return ExampleCoverage(len(unique), len(with_examples), len(with_probes))


def check_program(prompt: str, code: str) -> str:
    """The program the sandbox runs: the candidate (with the prompt's imports, or the prompt plus
    the completion), then each example, printing what it returned and whether it matched, then
    each probe call (each with a CPU-time limit), printing what it returned."""
    name = entry_point(prompt)
    if name is None:  # a task in words (MBPP style): the program alone, with no example to run
        body = code
    elif re.search(rf"^\s*def\s+{re.escape(name)}\s*\(", code, re.MULTILINE):
        imports = [line for line in prompt.splitlines() if line.startswith(("import ", "from "))]
        body = "\n".join(imports) + "\n" + code
    else:
        body = prompt + code
    found = docstring_examples(prompt)
    examples = json.dumps(found)
    probes = json.dumps(varied_calls(name, [call for call, _ in found]))
    # The examples' line is printed before any probe runs, so a probe that hangs or crashes the
    # interpreter costs the probes' part of the signature only, never the check.
    runner = f"""
import json as _json
import signal as _signal
import time as _time
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
print({_MARK!r} + _json.dumps(_results), flush=True)

def _out_of_time(*_):
    raise TimeoutError()

_signal.signal(_signal.SIGPROF, _out_of_time)
_probed = []
_start = _time.process_time()
for _call in _json.loads({probes!r}):
    if _time.process_time() - _start > {PROBES_CPU_SECONDS!r}:
        _probed.append("<skipped>")
        continue
    _signal.setitimer(_signal.ITIMER_PROF, {PROBE_CPU_SECONDS!r})
    try:
        _probed.append(repr(eval(_call))[:200])
    except BaseException as _error:
        _probed.append("<" + type(_error).__name__ + ">")
    finally:
        _signal.setitimer(_signal.ITIMER_PROF, 0)
print({_PROBE_MARK!r} + _json.dumps(_probed))
"""
    return body + "\n" + runner


def _run_check(sandbox: RunsPython, program: str) -> CheckResult:
    lines = sandbox.run_python(program).stdout.splitlines()
    examples = _marked(lines, _MARK)
    if examples is None:
        return CheckResult(False, FAILED_TO_RUN)
    probed = _marked(lines, _PROBE_MARK)
    signature = [got for got, _ in examples]
    if probed is not None:
        signature += probed
    elif signature:
        signature.append("<probes failed>")
    passed = bool(examples) and all(ok for _, ok in examples)
    return CheckResult(passed, json.dumps(signature))


def _marked(lines: list[str], mark: str) -> list[Any] | None:
    for line in reversed(lines):
        if line.startswith(mark):
            found: list[Any] = json.loads(line[len(mark) :])
            return found
    return None


def behaviour_key(signature: str, program: str) -> str | None:
    """What decides a program's agreement within its question: its behaviour signature; with no
    docstring example, its text (only identical programs agree); None (no answer) when it did
    not run."""
    if signature == NO_EXAMPLES:
        return "text:" + program
    if signature == FAILED_TO_RUN:
        return None
    return signature


@lru_cache(maxsize=4096)
def _checked(program: str) -> CheckResult:
    return _run_check(shared_sessions(), program)


def check_reply(prompt: str, response: str) -> CheckResult:
    """One reply's program checked as `check_all` checks it (a live policy's check); blocking (a
    sandbox run), so an event loop calls it in a thread. Recent programs are remembered in this
    process: a policy that meets the same program again (another sample, another policy in the
    same evaluation) does not run it twice."""
    return _checked(check_program(prompt, extract_code(response)))


def check_all(
    pairs: Iterable[tuple[str, str]],
    cache: Path | None = None,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> dict[tuple[str, str], CheckResult]:
    """Check every (prompt, response) pair once; results are cached by content in `cache` (a JSON
    file), so a second run of a report spends no sandbox time. A write keeps this call's programs
    only, so programs no longer built (an older parser's) do not pile up."""
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
    done = 0

    def one(pair: tuple[str, str]) -> tuple[str, CheckResult]:
        nonlocal done
        checked = _run_check(sandbox, programs[pair])
        done += 1
        if progress is not None and (done % 100 == 0 or done == len(todo)):
            progress(done, len(todo))
        return digests[pair], checked

    with ThreadSessions(Sandbox()) as sandbox, ThreadPoolExecutor(max_workers=workers) as pool:
        for digest, checked in pool.map(one, todo):
            stored[digest] = [checked.passed, checked.signature]
    if cache is not None and todo:
        cache.parent.mkdir(parents=True, exist_ok=True)
        kept = {digest: stored[digest] for digest in sorted(set(digests.values()))}
        cache.write_text(json.dumps(kept), encoding="utf-8")
    return {
        pair: CheckResult(bool(stored[digests[pair]][0]), str(stored[digests[pair]][1]))
        for pair in unique
    }
