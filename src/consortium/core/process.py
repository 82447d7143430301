"""Child processes: `ManagedProcess` starts one, waits until it is ready (or says why it is not:
its exit code and last lines, or the time it was given) and stops it (terminate, then kill after
a grace period); and what /proc says of any pid (`process_state`, `is_running`,
`command_line`), for processes this program did not start.

Every launcher uses it: the `consortium …` child servers (runtime/launch.py), PostgreSQL
(runtime/pgserver.py), Ray's nodes (runtime/raycluster.py), llama.cpp's servers
(smallmodels/llamacpp.py) and the sandbox's program runner (sandbox/session.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from consortium.core.errors import ProcessStartError

GONE_STATES = ("Z", "X")
"""A zombie has finished; X is a dead process not yet removed."""


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, Z …); None for no such process (or no /proc)."""
    try:
        return stat_fields(pid)[0]
    except (OSError, IndexError):
        return None


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields from the state on (field 3 first); OSError for no such process."""
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def is_running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie has finished)."""
    state = process_state(pid)
    return state is not None and state not in GONE_STATES


def command_line(pid: int) -> list[bytes]:
    """The arguments of a live process; empty when it is gone (or hides them)."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
    except OSError:
        return []
    return arguments.split(b"\0") if arguments else []


def end_process(pid: int, grace: float = 10.0) -> bool:
    """SIGTERM a process this program may not have started (a pid from a state file), SIGKILL it
    after `grace` seconds; False when it was already gone. A child of this process is reaped."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_running(pid):
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


class StoppedOnExit:
    """`with` starts it (`start()`) and stops it (`stop()`) on the way out, error or not."""

    def start(self) -> object:
        raise NotImplementedError

    def stop(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


class ManagedProcess(StoppedOnExit):
    """`with ManagedProcess(command, label="x server", ready=answers, log=path) as process:` …

    `start()` launches the command and waits until `ready()` is true; if the process exits
    first, or `startup_timeout` passes, it is stopped and a `ProcessStartError` says why (the
    exit code and the last lines of its log, or the timeout). `launch()` and `wait_ready()` are
    the two halves, for starting several before waiting on any. Output goes to `log` (a path,
    stdout and stderr together) or, without one, stderr to a temporary file that `output()`
    reads. `new_session` starts it in a session of its own, and `stop()` then signals the
    whole process group."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        label: str,
        ready: Callable[[], bool],
        startup_timeout: float = 60.0,
        log: Path | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        new_session: bool = False,
        stop_signal: signal.Signals = signal.SIGTERM,
        grace: float = 10.0,
        poll_seconds: float = 0.1,
        popen_options: Mapping[str, object] | None = None,
    ) -> None:
        self.command = list(command)
        self.label = label
        self.ready = ready
        self.startup_timeout = startup_timeout
        self.log = log
        self.env = env
        self.cwd = cwd
        self.new_session = new_session
        self.stop_signal = stop_signal
        self.grace = grace
        self.poll_seconds = poll_seconds
        self.popen_options = dict(popen_options or {})
        self.process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, "launch the process first"
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self) -> Self:
        """Start the process without waiting for it to be ready."""
        if self.log is not None:
            with self.log.open("wb") as handle:
                self.process = self._popen(stdout=handle, stderr=subprocess.STDOUT)
        else:
            # read back if it fails to start; it lives as long as this object
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
            self.process = self._popen(stderr=self._stderr)
        return self

    def _popen(self, **streams: object) -> subprocess.Popen[bytes]:
        options = {**self.popen_options, **streams}
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            self.command,
            env=self.env,
            cwd=self.cwd,
            start_new_session=self.new_session,
            **options,
        )

    def wait_ready(self) -> Self:
        """Until `ready()`; stopped, and a `ProcessStartError`, when it exits or times out."""
        assert self.process is not None, "launch the process first"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self.process.poll()
            if code is not None:
                lines = self.last_lines()
                self.stop()
                raise ProcessStartError(self.label, exit_code=code, last_lines=lines)
            if self.ready():
                return self
            if time.monotonic() >= deadline:
                lines = self.last_lines()
                self.stop()
                raise ProcessStartError(
                    self.label, timeout=self.startup_timeout, last_lines=lines, log=self.log
                )
            time.sleep(self.poll_seconds)

    def start(self) -> Self:
        return self.launch().wait_ready()

    def output(self) -> str:
        """What the process wrote so far (its log, or its stderr), read without moving the offset
        it writes at."""
        if self.log is not None:
            return self.log.read_text(errors="replace") if self.log.exists() else ""
        if self._stderr is None or self._stderr.closed:
            return ""
        size = os.fstat(self._stderr.fileno()).st_size
        return os.pread(self._stderr.fileno(), size, 0).decode(errors="replace")

    def last_lines(self, count: int = 5) -> list[str]:
        return self.output().strip().splitlines()[-count:]

    def stop(self) -> int | None:
        """Signal it (`stop_signal`, to its group with `new_session`), SIGKILL after `grace`
        seconds, and reap it; its exit code, None when it was never started."""
        process, self.process = self.process, None
        code = None
        if process is not None:
            if process.poll() is None:
                self._signal(process, self.stop_signal)
                try:
                    process.wait(timeout=self.grace)
                except subprocess.TimeoutExpired:
                    self._signal(process, signal.SIGKILL)
                    process.wait()
            code = process.returncode
        if self._stderr is not None:
            self._stderr.close()
        return code

    def _signal(self, process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if self.new_session:
                os.killpg(process.pid, sig)
            else:
                process.send_signal(sig)
