"""Many programs through one sandbox: a `SandboxSession` starts bubblewrap once, with a runner
inside (`fork_runner`) that forks a child per program, instead of a bwrap, a setpriv and a fresh
interpreter per program (about 15 ms each, most of an import's sandbox time).

Each program keeps the limits of `Sandbox.run_python` (CPU, wall clock, memory, processes, file
size, output) and sees no trace of the programs before it: the runner kills every other process
of the sandbox's user and empties the working directory and /tmp between two programs. What a
session shares across its programs is the uid (one lease for the session) and the runner,
which a program cannot read or change (it is not dumpable) but can kill: that program fails
and the next one gets a new session. With the fallback isolation (no bubblewrap) each program
is a `Sandbox.run_python` of its own.

A session is for one thread; threads that run programs side by side take one session each.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from contextlib import ExitStack
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from consortium.core.errors import ConfigError, ProcessStartError
from consortium.core.process import ManagedProcess, StoppedOnExit
from consortium.sandbox import fork_runner
from consortium.sandbox.runner import Sandbox, SandboxResult, _reap, checked_files

RUNNER = Path(fork_runner.__file__)
RUNNER_INSIDE = "/runner.py"
START_SECONDS = 30.0
"""How long a new runner may take to answer its first (empty) program."""
SLACK_SECONDS = 10.0
"""How much longer than a program's wall limit the session waits for the runner's answer."""


class RunsPython(Protocol):
    """What runs a program in a sandbox: `Sandbox` (one process per program) or
    `SandboxSession` (one sandbox for many)."""

    def run_python(
        self, code: str, *, files: Mapping[str, str] | None = None, stdin: str = ""
    ) -> SandboxResult: ...


class ClosedOnExit(StoppedOnExit):
    """`with` closes it (nothing to start: a runner starts with the first program)."""

    def close(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self.close()


class SandboxSession(ClosedOnExit):
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._runner: ManagedProcess | None = None
        self._resources = ExitStack()
        self._uid: int | None = None
        self._pending = b""

    def run_python(
        self, code: str, *, files: Mapping[str, str] | None = None, stdin: str = ""
    ) -> SandboxResult:
        """As `Sandbox.run_python`: `code` as main.py in an empty directory, `files` beside it."""
        if self.sandbox.isolation != "bwrap":
            return self.sandbox.run_python(code, files=files, stdin=stdin)
        request = {"code": code, "files": checked_files(files), "stdin": stdin}
        process = self._process or self._start()
        started = time.monotonic()
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
            line = self._answer(started + self.sandbox.limits.wall_seconds + SLACK_SECONDS)
        except BrokenPipeError:
            line = None
        if line is None:  # the runner died (or hung): the program is what stopped it
            self.close()
            return SandboxResult(
                None,
                "",
                "sandbox: the program stopped the sandbox's runner",
                time.monotonic() - started,
                "bwrap",
                "wall_time" if time.monotonic() - started > self.sandbox.limits.wall_seconds
                else None,
            )  # fmt: skip
        answer = json.loads(line)
        limit_hit = answer["limit_hit"] or self.sandbox._limit_from_exit(
            answer["returncode"], answer["stderr"][-2000:]
        )
        return SandboxResult(
            answer["returncode"] if limit_hit is None else None,
            answer["stdout"],
            answer["stderr"],
            answer["duration"],
            "bwrap",
            limit_hit,
        )

    @property
    def _process(self) -> subprocess.Popen[bytes] | None:
        return self._runner.process if self._runner is not None else None

    def close(self) -> None:
        """Stop the runner and whatever runs as its uid; give the uid and the folder back."""
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop()
            if self._uid is not None:
                _reap(self._uid)
        self._resources.close()
        self._resources = ExitStack()
        self._pending = b""

    def _start(self) -> subprocess.Popen[bytes]:
        sandbox = self.sandbox
        uid = None
        if sandbox._root:
            uid = self._resources.enter_context(sandbox._uids.lease())
        self._uid = uid
        workdir = Path(tempfile.mkdtemp(prefix="consortium-sandbox-"))
        self._resources.callback(shutil.rmtree, workdir, ignore_errors=True)
        if uid is not None:
            os.chown(workdir, uid, uid)
        limits = sandbox._child_limits(uid)
        settings = {
            "cpu_seconds": limits.cpu_seconds,
            "memory_bytes": limits.memory_bytes,
            "file_bytes": limits.file_bytes,
            "processes": limits.processes + 1,  # the runner is one of the uid's processes
            "wall_seconds": sandbox.limits.wall_seconds,
            "max_output_bytes": sandbox.limits.max_output_bytes,
        }
        command = sandbox.bwrap_command(workdir, uid, binds=[(RUNNER, RUNNER_INSIDE)])
        self._runner = ManagedProcess(
            [*command, "-I", RUNNER_INSIDE, json.dumps(settings)],
            label="the sandbox's program runner",
            # An empty program first: a runner that cannot start is this machine's error, never
            # a verdict on the program that happens to come first.
            ready=self._answers_an_empty_program,
            startup_timeout=START_SECONDS,
            env={"PATH": "/usr/bin"},
            new_session=True,
            stop_signal=signal.SIGKILL,
            popen_options={"stdin": subprocess.PIPE, "stdout": subprocess.PIPE},
        )
        try:
            self._runner.start()
        except ProcessStartError as error:
            self.close()
            said = error.last_lines[-1:]
            raise ConfigError(
                "the sandbox's program runner did not start under bubblewrap"
                + (f": {said[0]}" if said else "")
            ) from None
        assert self._runner.process is not None
        return self._runner.process

    def _answers_an_empty_program(self) -> bool:
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(json.dumps({"code": ""}).encode() + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            return False
        return self._answer(time.monotonic() + START_SECONDS) is not None

    def _answer(self, deadline: float) -> bytes | None:
        """The runner's next line, or None when it closed its output or `deadline` passed."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(timeout=remaining):
                    return None
                data = os.read(fd, 1 << 20)
                if not data:
                    return None
                self._pending += data
        line, _, self._pending = self._pending.partition(b"\n")
        return line


class ThreadSessions(ClosedOnExit):
    """A `SandboxSession` for each thread that runs a program through it, all closed together:
    a thread pool's sandbox. A session's sandbox also ends with the thread that started it
    (bubblewrap's --die-with-parent follows the thread), so none outlives its pool."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._local = threading.local()
        self._sessions: list[SandboxSession] = []
        self._lock = threading.Lock()

    def run_python(
        self, code: str, *, files: Mapping[str, str] | None = None, stdin: str = ""
    ) -> SandboxResult:
        session: SandboxSession | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = SandboxSession(self.sandbox)
            with self._lock:
                self._sessions.append(session)
        return session.run_python(code, files=files, stdin=stdin)

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()


@lru_cache(maxsize=1)
def shared_sessions() -> ThreadSessions:
    """This process's sandbox for programs run one at a time from anywhere (a grader, a live
    check from an event loop's executor threads): the default limits, a session per thread that
    runs one, all closed at exit."""
    sessions = ThreadSessions(Sandbox())
    atexit.register(sessions.close)
    return sessions
