"""A Ray cluster on one machine, node by node, as `ray start` starts one on many: a head and
worker nodes, each its own `ray start --block` process with its own `--num-cpus`, ports and
temporary folder (tests, benchmarks, trying `--executor ray --ray-address` locally).

The nodes use the loopback address 127.0.0.2: Ray replaces 127.0.0.1 by the machine's network
address, but keeps any other loopback address, so no traffic leaves loopback. Every node runs in
its own session; stopping one ends its process group, the processes naming its temporary folder
and their descendants (the raylet's workers), never processes found by a program name, so other
Ray instances on the machine are left alone. `kill_raylet(i)` SIGKILLs one worker node's raylet,
as a machine lost under a running job.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from consortium.core.errors import ConfigError
from consortium.core.process import (
    GONE_STATES,
    ManagedProcess,
    StoppedOnExit,
    command_line,
    is_running,
    stat_fields,
)
from consortium.runtime.launch import free_port

HOST = "127.0.0.2"
STARTED = "Ray runtime started"
IDLE_TITLES = {"ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent"}
DRIVER_ENV = {"RAY_AUTH_MODE": "disabled"}
"""What a driver's environment needs to join (the nodes get it too): with a token file in
~/.ray (Ray 2.60 writes one), a head turned token authentication on while the workers joining it
sent no token and were refused. The cluster is reachable on loopback only."""


@dataclass
class RayNode:
    """One `ray start --block` process and what it started."""

    label: str
    num_cpus: int
    temp_dir: Path
    process: ManagedProcess | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.temp_dir.with_suffix(".log")

    def started(self) -> bool:
        """`ray start` says so (it does once the node is registered with the head)."""
        return self.log.is_file() and STARTED in self.log.read_text(errors="replace")

    def pids(self) -> list[int]:
        """Every live process (not a zombie) of this node: those whose command line names its
        folder or that are in its process group, and their descendants (the raylet's workers
        rename themselves `ray::…` and leave the group)."""
        marker = str(self.temp_dir).encode()
        group = self.process.pid if self.process is not None and self.process.process else None
        parents: dict[int, int] = {}
        found: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            pid = int(entry.name)
            try:
                stat = stat_fields(pid)
            except OSError:
                continue
            if stat[0] in GONE_STATES:
                continue
            parents[pid] = int(stat[1])
            if (group is not None and int(stat[2]) == group) or marker in b"\0".join(
                command_line(pid)
            ):
                found.add(pid)
        grown = True
        while grown:
            children = {pid for pid, parent in parents.items() if parent in found} - found
            found |= children
            grown = bool(children)
        return sorted(found)

    def running_jobs(self) -> list[str]:
        """The names of the Ray tasks this node's workers are running (`ray::NAME` titles)."""
        names = []
        for pid in self.pids():
            title = b"".join(command_line(pid)[:1]).decode(errors="replace")
            if title.startswith("ray::") and title not in IDLE_TITLES:
                names.append(title.removeprefix("ray::"))
        return names

    def raylet_pid(self) -> int | None:
        for pid in self.pids():
            command = command_line(pid)
            if command and command[0].endswith(b"/raylet"):
                return pid
        return None

    def stop(self) -> None:
        """Its processes (the workers that left its group included): SIGTERM, then SIGKILL."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 5
            while pids and time.monotonic() < deadline:
                pids = [pid for pid in pids if is_running(pid)]
                time.sleep(0.1)
            if not pids:
                break
        if self.process is not None:
            self.process.stop()


class LocalRayCluster(StoppedOnExit):
    """`with LocalRayCluster(head_cpus=0, worker_cpus=(1, 1)) as cluster: cluster.address` …

    `env` is given to every node (the jobs' workers inherit it: e.g. PYTHONPATH)."""

    def __init__(
        self,
        *,
        head_cpus: int = 0,
        worker_cpus: tuple[int, ...] = (1, 1),
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 120.0,
        object_store_bytes: int = 80 * 1024 * 1024,
    ) -> None:
        self.head_cpus = head_cpus
        self.worker_cpus = worker_cpus
        self.env = {**os.environ, **(env or {}), **DRIVER_ENV, "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self.startup_timeout = startup_timeout
        self.object_store_bytes = object_store_bytes
        self.port = free_port()
        self.nodes: list[RayNode] = []
        self._root: Path | None = None

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def workers(self) -> list[RayNode]:
        return self.nodes[1:]

    def start(self) -> Self:
        # Short paths: Ray's Unix sockets live in the temp folder and a socket path is < 108 bytes.
        self._root = Path(tempfile.mkdtemp(prefix="crc-", dir="/tmp"))
        try:
            head = self._launch_node("head", self.head_cpus, ["--head", f"--port={self.port}"])
            head.wait_ready()  # a worker that calls too early is refused, not retried
            workers = [
                self._launch_node(f"w{index}", cpus, [f"--address={self.address}"])
                for index, cpus in enumerate(self.worker_cpus)
            ]
            for worker in workers:
                worker.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _launch_node(self, label: str, cpus: int, role: list[str]) -> ManagedProcess:
        assert self._root is not None
        node = RayNode(label, cpus, self._root / label)
        node.temp_dir.mkdir()
        ports = [free_port() for _ in range(6)]
        command = [
            sys.executable, "-m", "ray.scripts.scripts", "start", "--block", *role,
            f"--node-ip-address={HOST}", f"--num-cpus={cpus}", "--num-gpus=0",
            f"--temp-dir={node.temp_dir}", f"--object-store-memory={self.object_store_bytes}",
            f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
            f"--dashboard-agent-listen-port={ports[2]}", f"--dashboard-agent-grpc-port={ports[3]}",
            f"--metrics-export-port={ports[4]}", f"--runtime-env-agent-port={ports[5]}",
            "--disable-usage-stats", "--include-log-monitor=false",
        ]  # fmt: skip
        if label == "head":
            command += ["--include-dashboard=false"]
        node.process = ManagedProcess(
            command,
            label=f"ray node {label}",
            ready=node.started,
            startup_timeout=self.startup_timeout,
            log=node.log,
            env=self.env,
            cwd=self._root,
            new_session=True,
            grace=5.0,
            poll_seconds=0.3,
        ).launch()
        self.nodes.append(node)
        return node.process

    def kill_raylet(self, worker: int) -> int:
        """SIGKILL worker node `worker`'s raylet (a lost machine); returns its pid."""
        pid = self.workers[worker].raylet_pid()
        if pid is None:
            raise ConfigError(f"worker node {worker} has no raylet running")
        os.kill(pid, signal.SIGKILL)
        return pid

    def pids(self) -> list[int]:
        return [pid for node in self.nodes for pid in node.pids()]

    def stop(self) -> None:
        for node in reversed(self.nodes):  # workers first, the head last
            node.stop()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
