"""A `consortium …` server in a child process on a free loopback port, for tests, benchmarks and
scripts: started, waited for until a path answers 200, and stopped."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from typing import Self

import httpx

from consortium.core.process import ManagedProcess, StoppedOnExit


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChildServer(StoppedOnExit):
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
        self.port = free_port()
        command = [sys.executable, "-m", "consortium", *self.args, "--port", str(self.port)]
        self.process = ManagedProcess(
            command,
            label=label,
            ready=self._answers,
            startup_timeout=startup_timeout,
            env={**os.environ, **env} if env else None,
        )

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.root}{self.ready_path}", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self) -> Self:
        self.process.start()
        return self

    def output(self) -> str:
        """What the server wrote to stderr so far."""
        return self.process.output()

    def stop(self) -> None:
        self.process.stop()
