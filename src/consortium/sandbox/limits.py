"""Resource limits for a sandboxed child process, set one of two ways: by util-linux's
prlimit(1) at the head of the exec chain (Python can then spawn with vfork), or between fork and
exec (a `preexec_fn`, which forces a full fork of the parent) where prlimit is missing."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass


@dataclass(frozen=True)
class ChildLimits:
    cpu_seconds: int
    memory_bytes: int
    file_bytes: int
    processes: int


def prlimit_command(prlimit: str, limits: ChildLimits) -> list[str]:
    """A prlimit(1) prefix that sets `limits` and execs the command after it."""
    return [
        prlimit,
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
        f"--as={limits.memory_bytes}",
        f"--fsize={limits.file_bytes}",
        "--core=0",
        f"--nproc={limits.processes}",
        "--",
    ]


def set_limits(limits: ChildLimits) -> None:
    """The same limits in the calling process (a preexec_fn: only setrlimit, no locks)."""
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))


def processes_of(uid: int) -> int:
    """How many processes run as `uid` now."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count
