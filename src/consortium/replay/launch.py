"""Start a replay server in a child process on a free loopback port (demo, tests, benchmarks)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from consortium.errors import ConsortiumError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ReplayServerProcess:
    """`with ReplayServerProcess(data_dir) as server: server.base_url` …"""

    def __init__(
        self, data_dir: str | Path, *extra_args: str, startup_timeout: float = 60.0
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        # The server's stderr, read back if it fails to start; it lives as long as the server.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ReplayServerProcess:
        command = [
            sys.executable,
            "-m",
            "consortium",
            "replay",
            "serve",
            "--data",
            str(self.data_dir),
            "--port",
            str(self.port),
            "--exit-with-parent",
            *self.extra_args,
        ]
        self._process = subprocess.Popen(command, stderr=self._log)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._log.seek(0)
                stderr = self._log.read().decode(errors="replace")
                raise ConsortiumError(f"replay server exited at start: {stderr.strip()[-500:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ConsortiumError(f"replay server did not start within {self.startup_timeout:g}s")

    def stats(self) -> dict[str, object]:
        response = httpx.get(f"http://127.0.0.1:{self.port}/replay/stats", timeout=5.0)
        result: dict[str, object] = response.json()
        return result

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

    def __enter__(self) -> ReplayServerProcess:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
