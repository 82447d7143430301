"""Start a replay server in a child process on a free loopback port (demo, tests, benchmarks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import httpx

from consortium.runtime.launch import ChildServer, free_port

__all__ = ["ReplayServerProcess", "free_port"]


class ReplayServerProcess(ChildServer):
    """`with ReplayServerProcess(data_dir) as server: server.base_url` …"""

    def __init__(
        self,
        data_dir: str | Path | None,
        *extra_args: str,
        startup_timeout: float = 60.0,
        records: Sequence[str | Path] = (),
    ) -> None:
        """`data_dir` None with `records`: a server of records folders only (the environment's
        CONSORTIUM_REPLAY_DATA is not read)."""
        data = ["--data", str(data_dir)] if data_dir is not None else []
        super().__init__(
            "replay",
            "serve",
            *data,
            *[arg for folder in records for arg in ("--records", str(folder))],
            "--exit-with-parent",
            *extra_args,
            ready_path="/v1/models",
            label="replay server",
            startup_timeout=startup_timeout,
            env={"CONSORTIUM_REPLAY_DATA": ""} if data_dir is None else None,
        )

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def stats(self) -> dict[str, object]:
        response = httpx.get(f"{self.root}/replay/stats", timeout=5.0)
        result: dict[str, object] = response.json()
        return result
