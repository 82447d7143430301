"""The sandbox stops each escape and reports it; HumanEval and MBPP references pass inside it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest

from consortium.sandbox.runner import Sandbox, SandboxLimits
from consortium.sandbox.uids import FIRST_SANDBOX_UID, SANDBOX_UID_SLOTS, UidPool
from consortium.tasks.code import CodeGrader, pass_at_k
from consortium.tasks.loaders import build_tasks, read_rows
from tests.helpers import benchmarks_dir

BENCHMARKS = benchmarks_dir()
LIMITS = SandboxLimits(  # tight, so the tests that hit a limit wait little
    cpu_seconds=1,
    wall_seconds=3,
    memory_bytes=512 << 20,
    max_processes=16,
    max_output_bytes=64 << 10,
)
MODES = ["fallback"] + (["bwrap"] if shutil.which("bwrap") else [])
# The limits are set by prlimit(1) in the exec chain where it is installed, else between fork
# and exec; every check runs both ways.

LIMITS_SET_BY = ["prlimit", "preexec"] if shutil.which("prlimit") else ["preexec"]


@pytest.fixture(
    scope="module",
    params=[(mode, by) for mode in MODES for by in LIMITS_SET_BY],
    ids=lambda param: "-".join(param),
)
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    mode, by = request.param
    box = Sandbox(LIMITS, isolation=mode)
    if by == "preexec":
        box._prlimit = None
    return box


def sandbox_processes() -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                uid = entry.stat().st_uid
            except OSError:
                continue
            count += FIRST_SANDBOX_UID <= uid < FIRST_SANDBOX_UID + SANDBOX_UID_SLOTS
            with contextlib.suppress(OSError):
                count += "consortium-sandbox" in os.readlink(f"/proc/{entry.name}/cwd")
    return count


def test_plain_code_runs(sandbox: Sandbox) -> None:
    result = sandbox.run_python("import math, json\nprint(json.dumps(math.factorial(5)))", stdin="")
    assert result.ok and result.stdout == "120\n"
    assert result.isolation == sandbox.isolation


def test_no_network(sandbox: Sandbox) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        result = sandbox.run_python(code + "print('connected')")
        assert not result.ok and "connected" not in result.stdout
        assert "Error" in result.stderr  # reported, not silent
        with pytest.raises(TimeoutError):
            listener.accept()


def test_no_reading_outside(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the-planted-secret")
    result = sandbox.run_python(f"print(open({str(secret)!r}).read())")
    assert not result.ok and "the-planted-secret" not in result.stdout
    assert "Error" in result.stderr


def test_no_writing_outside(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    result = sandbox.run_python(f"open({str(target)!r}, 'w').write('x')")
    assert not result.ok and not target.exists()


def test_no_inherited_secrets(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-in-the-parent")
    code = (
        "import os\nprint(os.environ.get('OPENAI_API_KEY'))\n"
        "try:\n    print(open(f'/proc/{os.getppid()}/environ', 'rb').read())\n"
        "except Exception as error:\n    print('blocked', type(error).__name__)\n"
    )
    result = sandbox.run_python(code)
    assert "sk-planted-in-the-parent" not in result.stdout + result.stderr
    assert result.stdout.startswith("None\n")


def test_fork_bomb_is_contained(sandbox: Sandbox) -> None:
    result = sandbox.run_python("import os\nwhile True:\n    os.fork()\n")
    assert not result.ok
    assert result.limit_hit == "processes" or "not allowed" in result.stderr
    assert sandbox_processes() == 0  # nothing left behind


def test_memory_bomb_is_stopped(sandbox: Sandbox) -> None:
    # Only the memory limit can be reached: the CPU and wall limits are far beyond what filling
    # 256 MiB costs on a loaded machine (with the suite's 1 s CPU limit, page faults under load
    # used to reach the CPU limit first).
    roomy = Sandbox(
        replace(LIMITS, cpu_seconds=60, wall_seconds=120, memory_bytes=256 << 20),
        isolation=sandbox.isolation,
    )
    roomy._prlimit = sandbox._prlimit
    code = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"
    result = roomy.run_python(code)
    assert result.limit_hit == "memory"
    assert "MemoryError" in result.stderr
    assert result.duration < 60  # stopped by the memory limit, long before the others


def test_infinite_loop_is_stopped(sandbox: Sandbox) -> None:
    result = sandbox.run_python("while True:\n    pass\n")
    assert result.limit_hit == "cpu_time"
    assert result.duration < LIMITS.wall_seconds


def test_sleeping_forever_hits_the_wall_clock(sandbox: Sandbox) -> None:
    result = sandbox.run_python("import time\ntime.sleep(60)\n")
    assert result.limit_hit == "wall_time"
    assert result.duration < LIMITS.wall_seconds + 2
    assert sandbox_processes() == 0


def test_huge_output_is_cut(sandbox: Sandbox) -> None:
    result = sandbox.run_python("while True:\n    print('x' * 4096)\n")
    assert result.limit_hit == "output"
    assert len(result.stdout) <= LIMITS.max_output_bytes


def test_file_names_cannot_escape(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="escapes"):
        sandbox.run_python("print(1)", files={"../../evil.py": "x"})


def humaneval_tasks() -> list:  # type: ignore[type-arg]
    return build_tasks("humaneval", read_rows(BENCHMARKS / "humaneval/HumanEval.jsonl.gz"))


def test_every_humaneval_solution_passes_and_a_mutant_fails() -> None:
    grader = CodeGrader(Sandbox(SandboxLimits(cpu_seconds=10, wall_seconds=20)))
    tasks = humaneval_tasks()
    assert len(tasks) == 164

    def both(task):  # type: ignore[no-untyped-def]
        mutant = '    return "__mutant__"\n' + task.reference
        return grader.grade(task, task.reference), grader.grade(task, mutant)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(both, tasks))
    failed = [t.id for t, (right, _) in zip(tasks, results, strict=True) if not right.correct]
    survived = [t.id for t, (_, wrong) in zip(tasks, results, strict=True) if wrong.correct]
    assert failed == [] and survived == []


def test_whole_function_answers_and_fenced_code_are_understood() -> None:
    task = next(t for t in humaneval_tasks() if t.meta["entry_point"] == "has_close_elements")
    whole = task.meta["prompt"] + task.reference
    fenced = f"Here you go:\n```python\n{whole}\n```\nThis works because…"
    grader = CodeGrader(Sandbox(LIMITS))
    assert grader.grade(task, fenced).correct
    assert not grader.grade(
        task, "```python\ndef has_close_elements(n, t):\n    return 1\n```"
    ).correct


def test_every_mbpp_test_split_solution_passes() -> None:
    tasks = build_tasks("mbpp", read_rows(BENCHMARKS / "mbpp/mbpp.jsonl"), split="test")
    assert len(tasks) == 500
    grader = CodeGrader(Sandbox(SandboxLimits(cpu_seconds=10, wall_seconds=20)))
    with ThreadPoolExecutor(4) as pool:
        grades = list(pool.map(lambda t: grader.grade(t, t.reference), tasks))
    assert [t.id for t, g in zip(tasks, grades, strict=True) if not g.correct] == []
    wrong = grader.grade(tasks[0], "def unrelated():\n    return 0\n")
    assert not wrong.correct and "tests failed" in wrong.detail


def test_pass_at_k_matches_enumeration() -> None:
    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(combinations(outcomes, k))
                brute = sum(any(s) for s in subsets) / len(subsets)
                assert pass_at_k(n, c, k) == pytest.approx(brute)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_uid_leases_are_exclusive_across_pools(tmp_path: Path) -> None:
    """Two pools (two processes, or two sandboxes in one) never hand out the same uid at once:
    a run kills whatever still runs as its uid when it ends."""
    first, second = UidPool(tmp_path), UidPool(tmp_path)
    with first.lease() as a, second.lease() as b, first.lease() as c:
        assert len({a, b, c}) == 3
    with first.lease() as again, second.lease() as other:
        assert again != other
        assert again in range(FIRST_SANDBOX_UID, FIRST_SANDBOX_UID + SANDBOX_UID_SLOTS)
