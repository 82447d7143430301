"""A throwaway PostgreSQL server on a free loopback port (tests, benchmarks, trying a cluster on
one machine): `initdb` into a fresh data directory, `pg_ctl start`, and on exit `pg_ctl stop`
and the directory removed.

It uses the server programs of the machine (Debian's `postgresql` package puts them in
/usr/lib/postgresql/N/bin; `scripts/system-deps.sh` installs it as root). PostgreSQL refuses to
run as root, so as root the server runs as the unprivileged `postgres` user the package creates
(through `runuser`). Authentication is `trust` on 127.0.0.1 only, and no Unix socket is opened.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

from consortium.core.errors import ConfigError
from consortium.runtime.launch import free_port

SUPERUSER = "consortium"


def server_programs() -> Path | None:
    """The folder holding `initdb` and `pg_ctl`, or None when PostgreSQL is not installed."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    return Path(versions[-1]).parent if versions else None


def _version(path: str) -> int:
    number = Path(path).parent.parent.name
    return int(number) if number.isdigit() else 0


class PostgresServer:
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
        self._runner: list[str] = []
        self._home: Path | None = None

    @property
    def data_dir(self) -> Path:
        assert self._home is not None, "start the server first"
        return self._home / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _run(self, program: str, *args: str, timeout: float = 120.0) -> None:
        command = [*self._runner, str(self.programs / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip()[-800:]
            raise ConfigError(f"PostgreSQL {program} failed: {detail}")

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
            self._runner = ["runuser", "-u", "postgres", "--"]
        try:
            self._run(
                "initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust",
                "--encoding=UTF8", "--no-sync", "--no-instructions",
            )  # fmt: skip
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
                "-c shared_buffers=16MB -c max_connections=60"
            )
            self._run(
                "pg_ctl", "-D", str(self.data_dir), "-o", options, "-l",
                str(self._home / "server.log"), "-w", "-t", str(int(self.startup_timeout)),
                "start",
            )  # fmt: skip
        except BaseException:
            self.stop()
            raise
        return self

    def log(self) -> str:
        path = self._home / "server.log" if self._home else None
        return path.read_text(errors="replace") if path and path.exists() else ""

    def create_database(self, name: str) -> str:
        """A new, empty database; returns its SQLAlchemy URL."""
        import psycopg

        address = f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres"
        with psycopg.connect(address, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self._home is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
            except (ConfigError, subprocess.TimeoutExpired):
                _kill_postmaster(self.data_dir)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _kill_postmaster(data_dir: Path) -> None:
    """pg_ctl could not stop it: SIGKILL the postmaster named in its pid file."""
    try:
        pid = int((data_dir / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 9)
    except (OSError, ValueError, IndexError):
        pass
