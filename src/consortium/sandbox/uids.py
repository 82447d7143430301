"""Unprivileged uids for sandboxed runs, leased machine-wide.

Each run as root gets a uid no other run holds, in this process or any other: the process cap
(RLIMIT_NPROC) counts per uid, and a finished run kills whatever still runs as its uid, so two
runs sharing one would cap and kill each other. A lease is an exclusive `flock` on the uid's lock
file; the kernel drops it when the holder exits, so a killed process leaks no uid.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FIRST_SANDBOX_UID = 61000
SANDBOX_UID_SLOTS = 256


class UidPool:
    def __init__(self, lock_dir: Path | None = None) -> None:
        self.lock_dir = lock_dir or Path(tempfile.gettempdir()) / "consortium-sandbox-uids"
        self._lock = threading.Lock()
        # this process tries its own free uids first, in the order they were returned
        self._free = list(range(FIRST_SANDBOX_UID, FIRST_SANDBOX_UID + SANDBOX_UID_SLOTS))

    @contextmanager
    def lease(self) -> Iterator[int]:
        uid, handle = self._acquire()
        try:
            yield uid
        finally:
            os.close(handle)  # releases the flock
            with self._lock:
                self._free.append(uid)

    def _acquire(self) -> tuple[int, int]:
        self.lock_dir.mkdir(mode=0o700, exist_ok=True)
        with self._lock:
            for uid in reversed(self._free):
                handle = os.open(self.lock_dir / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)  # held by another process
                    continue
                self._free.remove(uid)
                return uid, handle
        raise RuntimeError("no free sandbox uid; too many concurrent runs")
