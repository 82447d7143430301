"""The sandbox stops each escape and reports it; HumanEval and MBPP references pass inside it."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest

from consortium.core.errors import ConfigError
from consortium.sandbox import session as session_module
from consortium.sandbox.runner import Sandbox, SandboxLimits
from consortium.sandbox.session import (
    RUNNER_INSIDE,
    RunsPython,
    SandboxSession,
    ThreadSessions,
)
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
MODES = ["fallback", "bwrap"]  # bubblewrap: scripts/system-deps.sh; missing, its tests fail
# The limits are set by prlimit(1) in the exec chain where it is installed, else between fork
# and exec; every check runs both ways. A session (many programs through one bwrap) sets them
# in its runner's forked child.
LIMITS_SET_BY = ["prlimit", "preexec"]
RUNNERS = [(mode, by) for mode in MODES for by in LIMITS_SET_BY] + [("bwrap", "session")]


class Runner:
    """A way to run programs with given limits: one process per program, or a session."""

    def __init__(self, mode: str, by: str) -> None:
        self.mode, self.by = mode, by
        self.sessions: list[SandboxSession] = []

    def __call__(self, limits: SandboxLimits) -> RunsPython:
        box = Sandbox(limits, isolation=self.mode)  # type: ignore[arg-type]
        if self.by == "preexec":
            box._prlimit = None
        if self.by != "session":
            return box
        self.sessions.append(SandboxSession(box))
        return self.sessions[-1]


@pytest.fixture(scope="module", params=RUNNERS, ids=lambda param: "-".join(param))
def runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    made = Runner(*request.param)
    yield made
    for session in made.sessions:
        session.close()


@pytest.fixture(scope="module")
def sandbox(runner: Runner) -> RunsPython:
    return runner(LIMITS)


def sandbox_processes() -> int:
    """Processes of sandboxed programs still alive (a session's waiting runner is none)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                uid = entry.stat().st_uid
                if RUNNER_INSIDE.encode() in Path(entry.path, "cmdline").read_bytes():
                    continue
            except OSError:
                continue
            count += FIRST_SANDBOX_UID <= uid < FIRST_SANDBOX_UID + SANDBOX_UID_SLOTS
            with contextlib.suppress(OSError):
                count += "consortium-sandbox" in os.readlink(f"/proc/{entry.name}/cwd")
    return count


def test_plain_code_runs(sandbox: RunsPython, runner: Runner) -> None:
    result = sandbox.run_python("import math, json\nprint(json.dumps(math.factorial(5)))", stdin="")
    assert result.ok and result.stdout == "120\n"
    assert result.isolation == runner.mode


def test_no_network(sandbox: RunsPython) -> None:
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


def test_no_reading_outside(sandbox: RunsPython, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the-planted-secret")
    result = sandbox.run_python(f"print(open({str(secret)!r}).read())")
    assert not result.ok and "the-planted-secret" not in result.stdout
    assert "Error" in result.stderr


def test_no_writing_outside(sandbox: RunsPython, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    result = sandbox.run_python(f"open({str(target)!r}, 'w').write('x')")
    assert not result.ok and not target.exists()


def test_no_inherited_secrets(sandbox: RunsPython, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-in-the-parent")
    code = (
        "import os\nprint(os.environ.get('OPENAI_API_KEY'))\n"
        "try:\n    print(open(f'/proc/{os.getppid()}/environ', 'rb').read())\n"
        "except Exception as error:\n    print('blocked', type(error).__name__)\n"
    )
    result = sandbox.run_python(code)
    assert "sk-planted-in-the-parent" not in result.stdout + result.stderr
    assert result.stdout.startswith("None\n")


def test_fork_bomb_is_contained(sandbox: RunsPython) -> None:
    result = sandbox.run_python("import os\nwhile True:\n    os.fork()\n")
    assert not result.ok
    assert result.limit_hit == "processes" or "not allowed" in result.stderr
    assert sandbox_processes() == 0  # nothing left behind


def test_memory_bomb_is_stopped(runner: Runner) -> None:
    # Only the memory limit can be reached: the CPU and wall limits are far beyond what filling
    # 256 MiB costs on a loaded machine (with the suite's 1 s CPU limit, page faults under load
    # used to reach the CPU limit first).
    roomy = runner(replace(LIMITS, cpu_seconds=60, wall_seconds=120, memory_bytes=256 << 20))
    code = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"
    result = roomy.run_python(code)
    assert result.limit_hit == "memory"
    assert "MemoryError" in result.stderr
    assert result.duration < 60  # stopped by the memory limit, long before the others


def test_infinite_loop_is_stopped(runner: Runner) -> None:
    # A wall clock far above the CPU limit: on a loaded machine (the suite's other worker, a
    # build) the loop gets a share of a core, and a 3 s wall clock then stopped it first.
    roomy_wall = runner(replace(LIMITS, wall_seconds=60))
    result = roomy_wall.run_python("while True:\n    pass\n")
    assert result.limit_hit == "cpu_time"
    assert result.duration < 60


def test_sleeping_forever_hits_the_wall_clock(sandbox: RunsPython) -> None:
    result = sandbox.run_python("import time\ntime.sleep(60)\n")
    assert result.limit_hit == "wall_time"
    assert result.duration < LIMITS.wall_seconds + 10  # stopped, well before its 60 s sleep
    assert sandbox_processes() == 0


def test_huge_output_is_cut(sandbox: RunsPython) -> None:
    result = sandbox.run_python("while True:\n    print('x' * 4096)\n")
    assert result.limit_hit == "output"
    assert len(result.stdout) <= LIMITS.max_output_bytes


def test_file_names_cannot_escape(sandbox: RunsPython) -> None:
    with pytest.raises(ValueError, match="escapes"):
        sandbox.run_python("print(1)", files={"../../evil.py": "x"})


def test_a_session_answers_as_one_process_per_program() -> None:
    """Exit codes, output, errors, stdin, files and each limit: the same through a session as
    through a process of its own."""
    programs = [
        ("print(sum(range(10)))", {}, ""),
        ("import sys\nprint(sys.stdin.read()[::-1])", {}, "abc"),
        ("print(open('data/x.txt').read(), __name__, __file__)", {"data/x.txt": "7"}, ""),
        ("import helper", {"helper.py": "x = 7"}, ""),  # -I: the script's folder is not on the path
        ("raise ValueError('boom')", {}, ""),
        ("import sys\nsys.exit(3)", {}, ""),
        ("import sys\nsys.exit('a message')", {}, ""),
        ("def f(:\n    pass", {}, ""),
        ("while True:\n    pass", {}, ""),
        ("import time\ntime.sleep(60)", {}, ""),
        ("while True:\n    print('x' * 4096)", {}, ""),
        ("import os, sys\nos.write(1, b'raw ')\nprint('buffered')\nos._exit(5)", {}, ""),
    ]
    # a busy loop must reach its CPU second before the wall limit on a loaded machine too
    box = Sandbox(replace(LIMITS, wall_seconds=10), isolation="bwrap")
    with SandboxSession(box) as session:
        for code, files, stdin in programs:
            alone = box.run_python(code, files=files, stdin=stdin)
            shared = session.run_python(code, files=files, stdin=stdin)
            assert shared.returncode == alone.returncode, code
            assert shared.limit_hit == alone.limit_hit, code
            assert shared.stdout[:4096] == alone.stdout[:4096], code
            assert shared.stderr.splitlines()[-1:] == alone.stderr.splitlines()[-1:], code
            assert "runner" not in shared.stderr, code  # no frame of the runner in a traceback


def test_nothing_a_program_leaves_reaches_the_next() -> None:
    """Files, stray processes and the runner's memory: the next program of a session sees none
    of them; a program that kills the runner fails alone and the session goes on."""
    leave = (
        "import os, subprocess\n"
        "subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        "open('left.txt', 'w').write('x')\nos.mkdir('locked')\nos.chmod('locked', 0)\n"
        "print('left')\n"
    )
    look = (
        "import os\nprint(sorted(os.listdir('.')))\n"
        "print([p for p in os.listdir('/proc') if p.isdigit() and int(p) not in "
        "(1, os.getpid(), os.getppid())])\n"
        "try:\n    open(f'/proc/{os.getppid()}/mem', 'rb').read(1)\n    print('read the runner')\n"
        "except OSError as error:\n    print(type(error).__name__)\n"
    )
    with SandboxSession(Sandbox(LIMITS, isolation="bwrap")) as session:
        assert session.run_python(leave).stdout == "left\n"
        seen = session.run_python(look)
        assert seen.ok and seen.stdout == "['main.py']\n[]\nPermissionError\n", seen
        killed = session.run_python("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
        assert not killed.ok and "stopped the sandbox's runner" in killed.stderr
        after = session.run_python("print('next')")
        assert after.ok and after.stdout == "next\n"
    assert sandbox_processes() == 0


def test_a_runner_that_cannot_start_is_one_clear_error_not_a_failed_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "runner.py"
    broken.write_text("import sys\nsys.exit('no runner here')\n")
    monkeypatch.setattr(session_module, "RUNNER", broken)
    with (
        SandboxSession(Sandbox(LIMITS, isolation="bwrap")) as session,
        pytest.raises(ConfigError, match="runner did not start under bubblewrap: no runner here"),
    ):
        session.run_python("print(1)")


def test_thread_sessions_give_each_thread_its_own_runner_and_close_them_all() -> None:
    sessions = ThreadSessions(Sandbox(LIMITS, isolation="bwrap"))
    code = "import os\nprint(os.getppid(), open('/proc/sys/kernel/hostname').read().strip())"
    with ThreadPoolExecutor(3) as pool:
        seen = list(pool.map(lambda _: sessions.run_python(code).stdout, range(30)))
        runners = [session._process for session in sessions._sessions]
        assert 1 <= len(runners) <= 3 and all(r is not None and r.poll() is None for r in runners)
        sessions.close()  # (a runner also dies with the thread that started it)
    assert all(r is not None and r.poll() is not None for r in runners)
    assert len(set(seen)) == 1 and seen[0].split()[0] == "2"  # pid 2 in each sandbox: the runner


def humaneval_tasks() -> list:  # type: ignore[type-arg]
    return build_tasks("humaneval", read_rows(BENCHMARKS / "humaneval/HumanEval.jsonl.gz"))


def test_every_humaneval_solution_passes_and_a_mutant_fails() -> None:
    """Through sessions (one per thread): the references and the mutants are graded as the
    per-process runs grade them (test_answer_aware and the records imports check those)."""
    sessions = ThreadSessions(Sandbox(SandboxLimits(cpu_seconds=10, wall_seconds=20)))
    grader = CodeGrader(sessions)
    tasks = humaneval_tasks()
    assert len(tasks) == 164

    def both(task):  # type: ignore[no-untyped-def]
        mutant = '    return "__mutant__"\n' + task.reference
        return grader.grade(task, task.reference), grader.grade(task, mutant)

    with sessions, ThreadPoolExecutor(4) as pool:
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
    sessions = ThreadSessions(Sandbox(SandboxLimits(cpu_seconds=10, wall_seconds=20)))
    grader = CodeGrader(sessions)
    with sessions, ThreadPoolExecutor(4) as pool:
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
