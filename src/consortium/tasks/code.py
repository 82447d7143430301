"""Code tasks (HumanEval, MBPP): assemble the program, run it against the task's tests in the
sandbox, and estimate pass@k."""

from __future__ import annotations

import re
from collections.abc import Sequence
from math import comb

from consortium.sandbox.session import RunsPython, shared_sessions
from consortium.tasks.base import Grade, Task

_FENCE = re.compile(r"```(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)


_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


def entry_point(prompt: str) -> str | None:
    """A code task's function: the last one its prompt defines (None: a task in words)."""
    names = _DEF.findall(prompt)
    return names[-1] if names else None


def extract_code(answer: str) -> str:
    """The code in an answer: the longest fenced block, else the whole text."""
    blocks = _FENCE.findall(answer)
    return max(blocks, key=len) if blocks else answer


def humaneval_program(task: Task, answer: str) -> str:
    """Prompt + completion, or the model's whole function when it restated the signature."""
    prompt: str = task.meta["prompt"]
    entry_point: str = task.meta["entry_point"]
    code = extract_code(answer)
    if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE):
        header = "\n".join(
            line for line in prompt.splitlines() if line.startswith(("import ", "from "))
        )
        body = f"{header}\n{code}"
    else:
        body = prompt + code
    return f"{body}\n\n{task.meta['test']}\n\ncheck({entry_point})\n"


def mbpp_program(task: Task, answer: str) -> str:
    setup = task.meta.get("test_setup_code") or ""
    tests = "\n".join(task.meta["test_list"])
    return f"{extract_code(answer)}\n\n{setup}\n{tests}\n"


class CodeGrader:
    """Right when the program exits cleanly inside the sandbox's limits."""

    def __init__(self, sandbox: RunsPython | None = None) -> None:
        self.sandbox: RunsPython = sandbox or shared_sessions()

    def program(self, task: Task, answer: str) -> str:
        if task.meta.get("format") == "humaneval":
            return humaneval_program(task, answer)
        if task.meta.get("format") == "mbpp":
            return mbpp_program(task, answer)
        raise ValueError(f"task {task.id}: no code format (expected humaneval or mbpp)")

    def grade(self, task: Task, answer: str) -> Grade:
        result = self.sandbox.run_python(self.program(task, answer))
        if result.ok:
            return Grade(True, 1.0, f"tests passed ({result.isolation}, {result.duration:.2f}s)")
        if result.limit_hit:
            return Grade(False, 0.0, f"stopped: {result.limit_hit} limit")
        last = result.stderr.strip().splitlines()[-1:] or [f"exit {result.returncode}"]
        return Grade(False, 0.0, f"tests failed: {last[0][:200]}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al., 2021): 1 - C(n-c, k) / C(n, k) for c right of n samples."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Mean pass@k over tasks, given (samples, right) per task."""
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)
