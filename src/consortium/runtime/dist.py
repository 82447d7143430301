"""Where independent jobs run: in this process, or on a Ray cluster (`--executor ray`).

Every executor runs a `Work` over items and returns the results in item order. The local one
runs the work in this process, through its pool, cache, budget and progress; Ray runs the work's
remote form, a picklable function of one item that builds its own pool from the (picklable) pool
configuration, so a worker needs only the configuration and network access to the endpoints.
Results do not depend on where the work ran: every job is determined by its inputs and seeds.

Ray: `RayExecutor()` starts a local instance (`ray.init(num_cpus=…)`); give `address="auto"`
(or `ray://head:10001`, or `RAY_ADDRESS`) to join a cluster started with `ray start --head` on
one machine and `ray start --address=HEAD:6379` on the others. With a cluster, the trace store
must be reachable from every machine (a Postgres URL, not a local SQLite file).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from consortium.core.errors import ClusterError, ConfigError, ConsortiumError

Item = TypeVar("Item")
Result = TypeVar("Result")
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class Work(Generic[Item, Result]):
    """Work on a list of items, two ways with the same results: `in_process`, in this process
    (sharing its pool, cache, budget and progress); `remote()`, a self-contained picklable
    function of one item (it opens its own pool), built only when the work is shipped."""

    in_process: Callable[[Sequence[Item]], Awaitable[list[Result]]]
    remote: Callable[[], Callable[[Item], Result]]


class Executor(Protocol):
    name: str
    shares_process: bool
    """True when the work runs in this process: budgets and the response cache apply."""

    async def run(self, work: Work[Item, Result], items: Sequence[Item]) -> list[Result]: ...


class LocalExecutor:
    """The work in this process (concurrent inside)."""

    name = "local"
    shares_process = True

    async def run(self, work: Work[Item, Result], items: Sequence[Item]) -> list[Result]:
        return await work.in_process(items)


def _apply(function: Callable[[Any], Any], item: Any) -> Any:
    return function(item)


TASK_RETRIES = 3
"""Times Ray runs a job again when its worker or node is lost (not when the job raises)."""


class RayExecutor:
    """The work's remote form, one Ray task per item. A job whose node dies is run again on
    another node (up to `TASK_RETRIES` times); past that the run stops with a `ClusterError`, and
    a job's own error (e.g. an `AgentError`) comes back as itself."""

    name = "ray"
    shares_process = False

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "--executor ray needs the ray extra: pip install 'consortium[ray]'"
            ) from None
        if not ray.is_initialized():
            try:
                ray.init(
                    address=address,
                    num_cpus=num_cpus if address is None else None,
                    include_dashboard=False,
                    log_to_driver=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as error:
                where = f"the Ray cluster at {address}" if address else "a local Ray instance"
                raise ConfigError(f"cannot start or join {where}: {error}") from None
        self._ray = ray
        self._remote = ray.remote(max_retries=TASK_RETRIES)(_apply)

    async def run(self, work: Work[Item, Result], items: Sequence[Item]) -> list[Result]:
        return await asyncio.to_thread(self._map, work.remote(), items)

    def _map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
        shared = self._ray.put(function)  # shipped once, not once per item
        pending = [self._remote.remote(shared, item) for item in items]
        try:
            return list(self._ray.get(pending))
        except self._ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, ConsortiumError):
                raise error.cause from None
            raise
        except self._ray.exceptions.RayError as error:
            for job in pending:
                with contextlib.suppress(Exception):  # finished, or on a node that is gone
                    self._ray.cancel(job, force=True)
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise ClusterError(
                f"the Ray cluster lost a job after {TASK_RETRIES} retries "
                f"({type(error).__name__}: {first_line[:200]}); the tasks that finished are in "
                "the trace store: run the command again with --resume (eval: --resume RUN_ID, "
                "from `consortium traces list`)"
            ) from None


def make_executor(name: str, address: str | None = None) -> Executor:
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(address)
    raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")


def shards(items: Sequence[Item], count: int) -> list[list[Item]]:
    """`items` in `count` contiguous, nearly equal parts (order kept when re-joined)."""
    count = max(1, min(count, len(items)))
    size, extra = divmod(len(items), count)
    parts, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        parts.append(list(items[start:end]))
        start = end
    return parts


def split_like(results: Sequence[Result], parts: Sequence[Sequence[Any]]) -> list[list[Result]]:
    """`results`, one per element of the joined `parts`, cut back into lists of their sizes."""
    cut, start = [], 0
    for part in parts:
        cut.append(list(results[start : start + len(part)]))
        start += len(part)
    return cut
