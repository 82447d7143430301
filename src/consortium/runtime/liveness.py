"""Which process a run of the trace store belongs to, and whether it is gone.

A run is stored with its owner: the host, the pid and a token of the process's start (the boot
and the start time in clock ticks, from /proc), so that a pid reused by a later process is not
taken for the run's. A run whose status is still `running` but whose owner is gone (kill -9, a
crash, the machine rebooted) was interrupted. Nothing is written while a run goes on (no
heartbeat), so this works alike on SQLite and PostgreSQL; a run owned by another host is taken
at its stored word, since its processes cannot be seen from here.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consortium.core.process import GONE_STATES, stat_fields


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    token: str | None
    """The boot and the start time of the process (None where /proc cannot tell)."""


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(socket.gethostname(), pid, start_token(pid))


def start_token(pid: int) -> str | None:
    """`BOOT_ID:START_TICKS` of a live process; None without /proc or for a gone process."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        fields = stat_fields(pid)
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in GONE_STATES:
        return None
    return f"{boot}:{fields[19]}"  # field 22 of stat: the start time, after boot, in ticks


def is_gone(host: str | None, pid: int | None, token: str | None) -> bool:
    """Whether the process that owned a run has surely ended: only a process of this host can
    be checked; an unknown owner (a run stored before owners were) is never called gone."""
    if host is None or pid is None or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, another user's
    now = start_token(pid)
    if token is None:
        return now is None and Path("/proc").is_dir()  # exists only as a zombie
    return now != token


def with_liveness(run: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row as read, `interrupted` where it is still `running` but its process is gone
    (killed, crashed: nothing marked it); the stored row is left as it is."""
    if run["status"] == "running" and is_gone(run["host"], run["pid"], run["pid_token"]):
        run["status"] = "interrupted"
    return run
