"""Run untrusted generated Python: a throwaway directory, no network, no inherited environment,
limits on CPU time, wall time, memory, processes, file size and output.

Isolation, strongest available first:

- ``bwrap`` (bubblewrap, Debian package ``bubblewrap``): new network, PID, IPC and UTS namespaces;
  the file system is only ``/usr`` and the Python installation, read-only, a private ``/tmp`` and
  the throwaway directory as ``/sandbox``. When Consortium runs as root, the code runs as a
  dedicated unprivileged uid (one per concurrent run), so the process cap really applies; all
  processes die with the sandbox's PID namespace.
- ``fallback`` (no bubblewrap): the same limits through ``setrlimit``, a cleared environment, a new
  session, the throwaway directory as working directory, and a Python audit hook that refuses
  sockets, forks, subprocesses, ``ctypes`` and opening files outside the sandbox directory and the
  Python installation. It stops honest mistakes and the common escapes; it is
  not a security boundary against hostile native code. Install bubblewrap for that.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from consortium.core.errors import ConfigError
from consortium.core.process import is_running
from consortium.sandbox.limits import ChildLimits, prlimit_command, processes_of, set_limits
from consortium.sandbox.uids import UidPool

Isolation = Literal["auto", "bwrap", "fallback"]


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 10
    wall_seconds: float = 20.0
    memory_bytes: int = 1 << 30
    max_processes: int = 32
    max_output_bytes: int = 1 << 20
    max_file_bytes: int = 16 << 20


@dataclass(frozen=True)
class SandboxResult:
    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    isolation: str
    limit_hit: str | None = None
    """"wall_time", "cpu_time", "memory" or "output" when a limit stopped the run."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.limit_hit is None


# The fallback's guard, run before the user's code in the same interpreter.
_AUDIT_GUARD = r"""
import os, sys
_root = os.path.realpath(os.getcwd())
_allowed = [_root] + [os.path.realpath(p) for p in {prefixes!r}]
_blocked = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
            "os.fork", "os.forkpty", "ctypes.", "pty.", "os.kill", "os.killpg")
def _guard(event, args):
    if event.startswith(_blocked):
        raise PermissionError(f"sandbox: {{event}} is not allowed")
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if not any(path == p or path.startswith(p + os.sep) for p in _allowed):
            raise PermissionError(f"sandbox: cannot open {{path}}")
sys.addaudithook(_guard)
del _guard
__file__ = "main.py"
exec(compile(open("main.py").read(), "main.py", "exec"), {{"__name__": "__main__"}})
"""


class Sandbox:
    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        isolation: Isolation = "auto",
        python: str | None = None,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.python = Path(os.path.realpath(python or sys.executable))
        # The installation root: bin/python3.x lives under it, the standard library beside it.
        self.prefix = self.python.parent.parent
        bwrap = shutil.which("bwrap")
        if isolation == "bwrap" and bwrap is None:
            raise ConfigError(
                "sandbox isolation 'bwrap' asked for, but bwrap is not installed "
                "(Debian: apt-get install bubblewrap)"
            )
        use_bwrap = bwrap is not None and isolation != "fallback" and self._bwrap_works(bwrap)
        if isolation == "bwrap" and not use_bwrap:
            raise ConfigError("bwrap is installed but cannot create namespaces here")
        self.isolation: str = "bwrap" if use_bwrap else "fallback"
        self._bwrap = bwrap
        # Limits by prlimit(1) where installed (see consortium.sandbox.limits).
        self._prlimit = shutil.which("prlimit")
        self._root = os.geteuid() == 0
        self._uids = UidPool()

    @staticmethod
    def _bwrap_works(bwrap: str) -> bool:
        probe = subprocess.run(
            [
                bwrap,
                "--unshare-net",
                "--unshare-pid",
                *_system_mounts(),
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--",
                "/usr/bin/true",
            ],
            capture_output=True,
            timeout=10,
            check=False,
        )
        return probe.returncode == 0

    def run_python(
        self, code: str, *, files: Mapping[str, str] | None = None, stdin: str = ""
    ) -> SandboxResult:
        """Run `code` as `main.py` in a fresh directory with `files` beside it."""
        workdir = Path(tempfile.mkdtemp(prefix="consortium-sandbox-"))
        try:
            (workdir / "main.py").write_text(code, encoding="utf-8")
            for name, text in checked_files(files).items():
                target = workdir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            if self._root and self.isolation == "bwrap":
                with self._uids.lease() as uid:
                    for path in [workdir, *workdir.rglob("*")]:
                        os.chown(path, uid, uid)
                    return self._execute(workdir, stdin, uid)
            return self._execute(workdir, stdin, None)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _command(self, workdir: Path, uid: int | None) -> tuple[list[str], Path]:
        if self.isolation == "bwrap":
            return [*self.bwrap_command(workdir, uid), "-I", "main.py"], workdir
        guard = workdir / ".guard.py"
        guard.write_text(_AUDIT_GUARD.format(prefixes=[str(self.prefix), "/usr", "/dev/null"]))
        return [str(self.python), "-I", ".guard.py"], workdir

    def bwrap_command(
        self, workdir: Path, uid: int | None, binds: Sequence[tuple[Path, str]] = ()
    ) -> list[str]:
        """bwrap up to the sandbox's interpreter (its arguments follow): `workdir` as /sandbox,
        each of `binds` read-only at its path inside, the code run as `uid` (None: a user
        namespace instead)."""
        assert self._bwrap is not None
        command = [
            self._bwrap,
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            *_system_mounts(),
            "--ro-bind",
            str(self.prefix),
            "/python",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--bind",
            str(workdir),
            "/sandbox",
            "--chdir",
            "/sandbox",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin",
            "--setenv",
            "HOME",
            "/sandbox",
            "--setenv",
            "PYTHONDONTWRITEBYTECODE",
            "1",
        ]
        for source, inside in binds:
            command += ["--ro-bind", str(source), inside]
        if uid is None:
            command += ["--unshare-user"]
        command.append("--")
        if uid is not None:
            command += [
                "/usr/bin/setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--",
            ]
        return [*command, str(Path("/python") / self.python.relative_to(self.prefix))]

    def _child_limits(self, uid: int | None) -> ChildLimits:
        processes = self.limits.max_processes
        if uid is None:  # our own uid: the cap counts what we already run
            processes += processes_of(os.getuid())
        limits = self.limits
        return ChildLimits(
            limits.cpu_seconds, limits.memory_bytes, limits.max_file_bytes, processes
        )

    def _execute(self, workdir: Path, stdin: str, uid: int | None) -> SandboxResult:
        command, cwd = self._command(workdir, uid)
        env = {"PATH": "/usr/bin", "HOME": str(workdir), "PYTHONDONTWRITEBYTECODE": "1"}
        limits = self._child_limits(uid)
        preexec: Callable[[], None] | None = None
        if self._prlimit is not None:
            command = [*prlimit_command(self._prlimit, limits), *command]
        else:
            preexec = lambda: set_limits(limits)  # noqa: E731
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=preexec,
        )
        assert process.stdin is not None
        try:
            process.stdin.write(stdin.encode())
            process.stdin.close()
        except BrokenPipeError:
            pass
        out, err, limit_hit = self._collect(process, started)
        if limit_hit is not None:
            _kill(process)
        returncode = process.wait()
        if uid is not None:
            _reap(uid)  # bwrap's inner session dies a moment after the outer one
        duration = time.monotonic() - started
        stderr = err.decode(errors="replace")
        if limit_hit is None:
            limit_hit = self._limit_from_exit(returncode, stderr[-2000:])
        return SandboxResult(
            returncode if limit_hit is None else None,
            out.decode(errors="replace"),
            stderr,
            duration,
            self.isolation,
            limit_hit,
        )

    @staticmethod
    def _limit_from_exit(returncode: int, stderr_tail: str) -> str | None:
        # bwrap reports a child killed by signal N as exit status 128 + N.
        if returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU, -signal.SIGKILL, 128 + 9):
            return "cpu_time"
        if "MemoryError" in stderr_tail:
            return "memory"
        if "BlockingIOError" in stderr_tail and "Resource temporarily unavailable" in stderr_tail:
            return "processes"
        return None

    def _collect(
        self, process: subprocess.Popen[bytes], started: float
    ) -> tuple[bytes, bytes, str | None]:
        assert process.stdout is not None and process.stderr is not None
        chunks: dict[int, list[bytes]] = {process.stdout.fileno(): [], process.stderr.fileno(): []}
        total = 0
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            selector.register(process.stderr, selectors.EVENT_READ)
            while selector.get_map():
                remaining = self.limits.wall_seconds - (time.monotonic() - started)
                if remaining <= 0:
                    return (
                        b"".join(chunks[process.stdout.fileno()]),
                        b"".join(chunks[process.stderr.fileno()]),
                        "wall_time",
                    )
                for key, _ in selector.select(timeout=remaining):
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        continue
                    chunks[key.fd].append(data)
                    total += len(data)
                    if total > self.limits.max_output_bytes:
                        return (
                            b"".join(chunks[process.stdout.fileno()])[
                                : self.limits.max_output_bytes
                            ],
                            b"".join(chunks[process.stderr.fileno()])[-4096:],
                            "output",
                        )
        return (
            b"".join(chunks[process.stdout.fileno()]),
            b"".join(chunks[process.stderr.fileno()]),
            None,
        )


def checked_files(files: Mapping[str, str] | None) -> dict[str, str]:
    """`files` by their relative names; a name that would land outside the directory raises."""
    checked = {}
    for name, text in (files or {}).items():
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise ValueError(f"sandbox file name escapes the directory: {name!r}")
        checked[str(Path(*parts))] = text
    return checked


def _system_mounts() -> list[str]:
    """/usr read-only, and /bin, /lib, /lib64, /sbin as they are here (links on merged-/usr)."""
    mounts = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / top
        if path.is_symlink():
            mounts += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            mounts += ["--ro-bind", str(path), str(path)]
    return mounts


def _reap(uid: int, patience: float = 5.0) -> None:
    """Kill whatever still runs as the sandbox `uid` and wait until nothing does."""
    deadline = time.monotonic() + patience
    while True:
        alive = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with suppress(OSError):
                    if entry.stat().st_uid == uid and is_running(int(entry.name)):
                        alive.append(int(entry.name))
        if not alive or time.monotonic() > deadline:
            return
        for pid in alive:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """The whole session; under bwrap its PID namespace dies with it."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
