"""A pool file rewritten while `serve` runs (`consortium local start` brings its servers back on
new ports; an edit by hand) is read again before the next request, not only at a restart.

Between requests the file's stamp (modification time, size, inode: an atomic rename counts) is
compared with the one last read; a changed file is loaded, the policy built again over it, and
both are swapped in together. A file that does not load or build is one logged line, and the pool
in use stays. Agents of models whose entry did not change are kept; the others are closed when
the server stops (a request in flight may still be waiting on one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from consortium.coord.base import Coordinator
from consortium.core.errors import ConsortiumError
from consortium.pool import Pool
from consortium.pool.base import Agent
from consortium.pool.config import PoolConfig, load_pool

Stamp = tuple[int, int, int] | None


def file_stamp(path: Path) -> Stamp:
    """What changes when the file is written or replaced; None while it does not exist."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


@dataclass(frozen=True)
class Reloaded:
    coordinator: Coordinator
    pool: Pool


class PoolFileWatch:
    """The pool file `serve` was started with, and how to build its policy over a pool."""

    def __init__(
        self,
        path: Path,
        build: Callable[[PoolConfig], Coordinator],
        log: Callable[[str], None],
    ) -> None:
        self.path = path
        self.build = build
        self.log = log
        self.seen = file_stamp(path)
        self.retired: list[Agent] = []

    def changed(self) -> bool:
        return file_stamp(self.path) != self.seen

    def reload(self, current: Pool) -> Reloaded | None:
        """The policy and the pool of the file as it is now; None, and one logged line, when
        it cannot be used. Blocking (a policy or a local model may load weights): run it off
        the event loop."""
        stamp = file_stamp(self.path)
        try:
            config = load_pool(self.path)
            coordinator = self.build(config)
            pool, retired = current.reloaded(config)
        except ConsortiumError as error:
            self.log(f"{self.path} changed but cannot be used; the pool read before stays: {error}")
            return None
        finally:
            self.seen = stamp  # a broken file is reported once, not on every request
        self.retired.extend(retired)
        self.log(f"pool file {self.path} reloaded: {_difference(current, pool)}")
        return Reloaded(coordinator, pool)

    async def aclose(self) -> None:
        """Close the agents the reloads replaced."""
        for agent in self.retired:
            await agent.aclose()
        self.retired.clear()


def _difference(old: Pool, new: Pool) -> str:
    """The models a reload changed, added or removed, in a few words."""
    changed = [name for name, agent in new.agents.items() if old.agents.get(name) is not agent]
    removed = [name for name in old.agents if name not in new.agents]
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (("new or changed:", changed), ("removed:", removed))
        if names
    ]
    return "; ".join(parts) or "no model changed"
