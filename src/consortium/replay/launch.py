"""Start a replay server in a child process on a free loopback port (demo, tests, benchmarks)."""

from __future__ import annotations

from pathlib import Path

import httpx

from consortium.runtime.launch import ChildServer, free_port

__all__ = ["ReplayServerProcess", "free_port"]


class ReplayServerProcess(ChildServer):
    """`with ReplayServerProcess(data_dir) as server: server.base_url` …"""

    def __init__(
        self, data_dir: str | Path, *extra_args: str, startup_timeout: float = 60.0
    ) -> None:
        super().__init__(
            "replay",
            "serve",
            "--data",
            str(data_dir),
            "--exit-with-parent",
            *extra_args,
            ready_path="/v1/models",
            label="replay server",
            startup_timeout=startup_timeout,
        )

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def stats(self) -> dict[str, object]:
        response = httpx.get(f"{self.root}/replay/stats", timeout=5.0)
        result: dict[str, object] = response.json()
        return result
