"""A `consortium …` server in a child process on a free loopback port, for tests, benchmarks and
scripts: started, waited for until a path answers 200, and stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Self

import httpx

from consortium.core.errors import ConsortiumError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChildServer:
    """`with ChildServer("serve", "--pool", "p.toml", …, ready_path="/health") as s: s.root` …

    The command is `python -m consortium ARGS --port PORT`; `env` adds to this environment."""

    def __init__(
        self,
        *args: str,
        ready_path: str,
        label: str = "server",
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.args = list(args)
        self.ready_path = ready_path
        self.label = label
        self.env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        # The server's stderr, read back if it fails to start; it lives as long as the server.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        command = [sys.executable, "-m", "consortium", *self.args, "--port", str(self.port)]
        environment = {**os.environ, **self.env} if self.env else None
        self._process = subprocess.Popen(command, stderr=self._log, env=environment)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                stderr = self.output()
                raise ConsortiumError(f"{self.label} exited at start: {stderr.strip()[-500:]}")
            try:
                if httpx.get(f"{self.root}{self.ready_path}", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ConsortiumError(f"{self.label} did not start within {self.startup_timeout:g}s")

    def output(self) -> str:
        """What the server wrote to stderr so far (read without moving the offset the server
        writes at: the file is shared with it)."""
        size = os.fstat(self._log.fileno()).st_size
        return os.pread(self._log.fileno(), size, 0).decode(errors="replace")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        self._log.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
