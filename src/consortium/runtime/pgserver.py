"""A throwaway PostgreSQL server on a free loopback port (tests, benchmarks, trying a cluster on
one machine): `initdb` into a fresh data directory, the `postgres` server as a child process
(ready when its pid file says so), and on exit an immediate shutdown and the directory removed.

It uses the server programs of the machine (Debian's `postgresql` package puts them in
/usr/lib/postgresql/N/bin; `scripts/system-deps.sh` installs it as root). PostgreSQL refuses to
run as root, so as root the server runs as the unprivileged `postgres` user the package creates.
Authentication is `trust` on 127.0.0.1 only, and no Unix socket is opened.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Self

from consortium.core.errors import ConfigError
from consortium.core.process import ManagedProcess, StoppedOnExit
from consortium.runtime.launch import free_port

SUPERUSER = "consortium"


def server_programs() -> Path | None:
    """The folder holding `initdb` and `postgres` (beside `pg_ctl`), or None when PostgreSQL is
    not installed."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    return Path(versions[-1]).parent if versions else None


def _version(path: str) -> int:
    number = Path(path).parent.parent.name
    return int(number) if number.isdigit() else 0


class PostgresServer(StoppedOnExit):
    """`with PostgresServer() as server: server.url("db")` …; `create_database(name)` first."""

    def __init__(self, *, startup_timeout: float = 60.0) -> None:
        programs = server_programs()
        if programs is None:
            raise ConfigError(
                "PostgreSQL's server programs are not installed (Debian: apt-get install "
                "postgresql; scripts/system-deps.sh does it as root)"
            )
        self.programs = programs
        self.port = free_port()
        self.startup_timeout = startup_timeout
        self._as_user: dict[str, object] = {}
        self._home: Path | None = None
        self._server: ManagedProcess | None = None

    @property
    def data_dir(self) -> Path:
        assert self._home is not None, "start the server first"
        return self._home / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> Self:
        # /tmp, not a private temporary folder: the server's user must be able to enter it.
        self._home = Path(tempfile.mkdtemp(prefix="consortium-pg-"))
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                self._cleanup()
                raise ConfigError("running as root needs the `postgres` user") from None
            os.chown(self._home, user.pw_uid, user.pw_gid)
            self._as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        try:
            self._initdb()
            command = [
                str(self.programs / "postgres"), "-D", str(self.data_dir),
                "-c", "listen_addresses=127.0.0.1", "-p", str(self.port),
                "-c", "unix_socket_directories=", "-c", "shared_buffers=16MB",
                "-c", "max_connections=60",
            ]  # fmt: skip
            self._server = ManagedProcess(
                command,
                label="PostgreSQL",
                ready=self._accepts_connections,
                startup_timeout=self.startup_timeout,
                log=self._home / "server.log",
                cwd=self._home,
                stop_signal=signal.SIGQUIT,  # immediate shutdown: the data is thrown away
                popen_options=self._as_user,
            ).start()
        except BaseException:
            self.stop()
            raise
        return self

    def _initdb(self) -> None:
        command = [
            str(self.programs / "initdb"), "-D", str(self.data_dir), "-U", SUPERUSER,
            "--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions",
        ]  # fmt: skip
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=120, cwd=self._home, **self._as_user
        )  # type: ignore[call-overload]
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip()[-800:]
            raise ConfigError(f"PostgreSQL initdb failed: {detail}")

    def _accepts_connections(self) -> bool:
        """The postmaster's pid file says `ready` (its 8th line, as `pg_ctl -w` reads it)."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return len(lines) >= 8 and lines[7].strip() == "ready"

    def log(self) -> str:
        return self._server.output() if self._server else ""

    def create_database(self, name: str) -> str:
        """A new, empty database; returns its SQLAlchemy URL."""
        import psycopg

        address = f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres"
        with psycopg.connect(address, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
