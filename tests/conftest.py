from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.pool.config import PoolConfig
from consortium.replay.data import ReplayData, load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.pgserver import PostgresServer, server_programs

ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    path = Path(os.environ.get("CONSORTIUM_REPLAY_DATA", ROOT.parent / "shared/data/routerdc"))
    if not path.is_dir():
        pytest.fail(f"recorded data not found at {path}; set CONSORTIUM_REPLAY_DATA")
    return path


@pytest.fixture(scope="session")
def replay_dir() -> Path:
    return data_dir()


@pytest.fixture(scope="session")
def replay_data(replay_dir: Path) -> ReplayData:
    return load_replay(replay_dir)


@pytest.fixture(scope="session")
def replay_server(replay_dir: Path) -> Iterator[ReplayServerProcess]:
    with ReplayServerProcess(replay_dir) as server:
        yield server


@pytest.fixture(scope="session")
def split2_workers(replay_data: ReplayData, replay_server: ReplayServerProcess) -> PoolConfig:
    """The 7 open models of split2 on the session's replay server, as a pool."""
    return replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the machine's own in a temporary folder, on a loopback port;
    stopped and removed after the session (`scripts/system-deps.sh` installs it as root)."""
    if server_programs() is None:
        reason = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with PostgresServer() as server:
        yield server
        home = server.data_dir.parent
    assert not home.exists(), "the server's folder is removed"
