"""The program runner a `SandboxSession` starts inside one sandbox (bubblewrap); standard library
only, since the sandbox holds nothing but the Python installation.

It reads one JSON request per line on stdin (code, files, stdin) and answers one JSON line per
request on stdout. Each program runs in a forked child, so no interpreter starts per program:
the child sets its own limits (CPU, memory, file size, processes), takes fresh stdin, stdout and
stderr pipes, and runs the code as ``python -I main.py`` would. Between two programs nothing
carries over: every other process of the sandbox's user is killed and waited for, and the
working directory and /tmp are emptied. The runner is not dumpable, so a program (which runs as
the same user) cannot read or write the runner's memory through ptrace or /proc; a program that
kills the runner fails, and the session starts a new one for the next program.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
import stat
import sys
import time
import traceback
from typing import Any

WORKDIR = "/sandbox"
SCRATCH = "/tmp"
PR_SET_DUMPABLE = 4


def empty(folder: str) -> None:
    """Remove everything under `folder`, whatever modes a program left on it."""

    def writable_again(function: Any, path: str, _info: Any) -> None:
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path, onerror=writable_again)
        else:
            function(path)

    if os.stat(folder).st_uid == os.getuid():
        os.chmod(folder, stat.S_IRWXU)
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            os.chmod(entry.path, stat.S_IRWXU)
            shutil.rmtree(entry.path, onerror=writable_again)
        else:
            os.unlink(entry.path)


def others() -> list[int]:
    """The live processes of this user in the sandbox's PID namespace, but this one and init."""
    me, uid, found = os.getpid(), os.getuid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        if int(fields["Uid"].split()[1]) == uid and not fields["State"].strip().startswith("Z"):
            found.append(int(name))
    return found


def kill_the_rest() -> None:
    """Kill every other process of this user and wait until none is alive."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # every process we may signal but ourselves and init
        if not others():
            return
        time.sleep(0.002)


def run_child(
    code: str, stdin_fd: int, stdout_fd: int, stderr_fd: int, limits: dict[str, int]
) -> None:
    """In the forked child: limits, fresh standard streams, then the program as ``main.py``.
    Signal dispositions stay the runner's, which are a fresh interpreter's."""
    status = 1
    try:
        os.setsid()
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stderr_fd, 2)
        os.closerange(3, 1024)
        cpu = limits["cpu_seconds"]
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        os.chdir(WORKDIR)
        sys.argv = ["main.py"]  # sys.path stays as -I left it: no script folder in it
        script = os.path.join(WORKDIR, "main.py")
        status = 0
        try:
            namespace = {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__}
            exec(compile(code, script, "exec"), namespace)
        except SystemExit as stop:
            if stop.code is None:
                status = 0
            elif isinstance(stop.code, int):
                status = stop.code & 0xFF
            else:
                print(stop.code, file=sys.stderr)
                status = 1
        except BaseException as error:  # an uncaught error ends the program as Python's would
            trace = error.__traceback__
            traceback.print_exception(type(error), error, trace.tb_next if trace else None)
            status = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                status = status or 120  # as Python when flushing stdout at exit fails
    finally:
        os._exit(status)


def collect(
    pid: int, stdin_data: bytes, fds: tuple[int, int, int], wall_seconds: float, max_output: int
) -> tuple[bytes, bytes, str | None]:
    """The child's stdout and stderr until it exits (what its own children still write after
    that is cut, as when bubblewrap ends with its main process), the wall clock runs out or the
    output passes its cap (then the limit's name); `stdin_data` is written to it meanwhile."""
    stdin_w, stdout_r, stderr_r = fds
    started = time.monotonic()
    chunks: dict[int, list[bytes]] = {stdout_r: [], stderr_r: []}
    total, pending, readers = 0, stdin_data, {stdout_r, stderr_r}
    exited = os.pidfd_open(pid)
    for fd in (stdin_w, stdout_r, stderr_r):
        os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(exited, selectors.EVENT_READ)
        selector.register(stdout_r, selectors.EVENT_READ)
        selector.register(stderr_r, selectors.EVENT_READ)
        selector.register(stdin_w, selectors.EVENT_WRITE)
        try:
            while readers:
                remaining = wall_seconds - (time.monotonic() - started)
                if remaining <= 0:
                    return b"".join(chunks[stdout_r]), b"".join(chunks[stderr_r]), "wall_time"
                ready = [key.fd for key, _ in selector.select(timeout=remaining)]
                if stdin_w in ready:
                    try:
                        pending = pending[os.write(stdin_w, pending[:65536]) :]
                    except BrokenPipeError:  # the program closed its stdin
                        pending = b""
                    except BlockingIOError:
                        pass
                    if not pending:
                        selector.unregister(stdin_w)
                        os.close(stdin_w)
                        stdin_w = -1
                if exited in ready:  # what the pipes hold now is all there is
                    readers_left = list(readers)
                    readers.clear()
                else:
                    readers_left = [fd for fd in ready if fd in readers]
                for fd in readers_left:
                    while True:
                        try:
                            data = os.read(fd, 65536)
                        except BlockingIOError:
                            break
                        if not data:
                            readers.discard(fd)
                            selector.unregister(fd)
                            break
                        chunks[fd].append(data)
                        total += len(data)
                        if total > max_output:
                            out = b"".join(chunks[stdout_r])[:max_output]
                            return out, b"".join(chunks[stderr_r])[-4096:], "output"
                        if exited not in ready:
                            break
        finally:
            os.close(exited)
            if stdin_w >= 0:
                os.close(stdin_w)
    return b"".join(chunks[stdout_r]), b"".join(chunks[stderr_r]), None


def run(request: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
    empty(WORKDIR)
    empty(SCRATCH)
    for name, text in {"main.py": request["code"], **request.get("files", {})}.items():
        path = os.path.join(WORKDIR, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    sys.stdout.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        run_child(request["code"], stdin_r, stdout_w, stderr_w, limits)
    for fd in (stdin_r, stdout_w, stderr_w):
        os.close(fd)
    try:
        out, err, limit_hit = collect(
            pid,
            request.get("stdin", "").encode(),
            (stdin_w, stdout_r, stderr_r),
            limits["wall_seconds"],
            limits["max_output_bytes"],
        )
    finally:
        os.close(stdout_r)
        os.close(stderr_r)
        kill_the_rest()
    _, status = os.waitpid(pid, 0)
    return {
        "returncode": os.waitstatus_to_exitcode(status),
        "stdout": out.decode(errors="replace"),
        "stderr": err.decode(errors="replace"),
        "duration": time.monotonic() - started,
        "limit_hit": limit_hit,
    }


def main() -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    limits = json.loads(sys.argv[1])
    requests = sys.stdin.buffer
    answers = sys.stdout
    for line in requests:
        answers.write(json.dumps(run(json.loads(line), limits)) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
