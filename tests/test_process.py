"""ManagedProcess, the one start / wait / stop of a child process every launcher uses, and the
/proc reading of a pid's state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consortium.core.errors import ConfigError, ProcessStartError
from consortium.core.process import (
    ManagedProcess,
    command_line,
    end_process,
    is_running,
    process_state,
)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_ready_when_the_check_says_so_and_stopped_on_exit(tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    code = f"import pathlib, time\npathlib.Path({str(flag)!r}).touch()\ntime.sleep(60)"
    with ManagedProcess(python(code), label="sleeper", ready=flag.exists) as process:
        pid = process.pid
        assert is_running(pid) and process.running()
        assert b"-c" in command_line(pid)
    assert not is_running(pid) and process_state(pid) is None


def test_a_child_that_exits_at_start_says_its_exit_code_and_last_lines() -> None:
    code = "import sys\nprint('first', file=sys.stderr)\nsys.exit('the port is taken')"
    with pytest.raises(ProcessStartError) as raised:
        ManagedProcess(python(code), label="x server", ready=lambda: False).start()
    error = raised.value
    assert isinstance(error, ConfigError) and error.exit_code == 1
    assert str(error) == "x server exited at start (exit code 1): first | the port is taken"


def test_a_child_that_is_never_ready_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    process = ManagedProcess(
        python("import time\nprint('waiting', flush=True)\ntime.sleep(60)"),
        label="x server",
        ready=lambda: False,
        startup_timeout=1.0,
        log=log,
    )
    started = time.monotonic()
    with pytest.raises(ProcessStartError, match=r"x server did not start within 1s \(log: "):
        process.start()
    assert time.monotonic() - started < 10
    assert process.process is None and "waiting" in log.read_text()


def test_stop_kills_a_child_that_ignores_sigterm_after_the_grace() -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    process = ManagedProcess(python(code), label="stubborn", ready=lambda: True, grace=0.5)
    process.start()
    time.sleep(0.3)  # the handler is in place
    assert process.stop() == -9


def test_end_process_stops_a_pid_it_did_not_start() -> None:
    child = subprocess.Popen(python("import time\ntime.sleep(60)"))
    assert end_process(child.pid, grace=2.0)
    assert child.wait(timeout=5) is not None and not is_running(child.pid)
    assert not end_process(child.pid)
    assert is_running(os.getpid())
