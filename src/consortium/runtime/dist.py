"""Where independent jobs run: in this process, or on a Ray cluster (`--executor ray`).

An executor maps a picklable function over items and returns the results in order. Jobs that
call models build their own pool from the (picklable) pool configuration, so a worker needs
only the configuration and network access to the endpoints. Results do not depend on where a job
ran: every job is determined by its inputs and seeds.

Ray: `RayExecutor()` starts a local instance (`ray.init(num_cpus=…)`); give `address="auto"`
(or `ray://head:10001`, or `RAY_ADDRESS`) to join a cluster started with `ray start --head` on
one machine and `ray start --address=HEAD:6379` on the others. With a cluster, the trace store
must be reachable from every machine (a Postgres URL, not a local SQLite file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from consortium.errors import ConfigError

Item = TypeVar("Item")
Result = TypeVar("Result")
EXECUTORS = ("local", "ray")


class Executor(Protocol):
    name: str

    def map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]: ...


class LocalExecutor:
    """One job after another, in this process (each job is itself concurrent inside)."""

    name = "local"

    def map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
        return [function(item) for item in items]


def _apply(function: Callable[[Any], Any], item: Any) -> Any:
    return function(item)


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "--executor ray needs the ray extra: pip install 'consortium[ray]'"
            ) from None
        if not ray.is_initialized():
            ray.init(
                address=address,
                num_cpus=num_cpus if address is None else None,
                include_dashboard=False,
                log_to_driver=False,
            )
        self._ray = ray
        self._remote = ray.remote(_apply)

    def map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
        shared = self._ray.put(function)  # shipped once, not once per item
        return list(self._ray.get([self._remote.remote(shared, item) for item in items]))


def make_executor(name: str, address: str | None = None) -> Executor | None:
    """None for "local" (callers keep their in-process path), a RayExecutor for "ray"."""
    if name == "local":
        return None
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
