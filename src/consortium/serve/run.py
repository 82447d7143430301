"""`consortium serve` as one library call: the policy built over the pool file, a trace run, and
the OpenAI-compatible server until it stops."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from consortium.core.errors import ConsortiumError
from consortium.runtime.budget import Limits
from consortium.runtime.store import DEFAULT_TRACES, TraceStore
from consortium.serve.learn.settings import LearnSettings

if TYPE_CHECKING:
    from consortium.coord.base import Coordinator


@dataclass(frozen=True)
class ServeConfig:
    pool: Path
    """The pool file; a rewritten one is read again before the next request."""
    policy: str
    """Any `--policy` form `coord.registry.build_coordinator` resolves."""
    host: str = "127.0.0.1"
    port: int = 8000
    name: str = "consortium"
    """The model id clients ask for."""
    token_env: str = "CONSORTIUM_SERVE_TOKEN"
    """The environment variable holding the bearer token (required off loopback)."""
    request_timeout: float = 300.0
    limits: Limits = field(default_factory=Limits)
    """Caps per request."""
    seed: int = 0
    substitute: tuple[str, ...] = ()
    """`--substitute OLD=NEW` options, as given."""
    traces: str = DEFAULT_TRACES
    learn: LearnSettings | None = None
    """`--learn DIR` and its options: traffic kept as records, feedback, guarded refits."""


def serve_ensemble(
    config: ServeConfig, log: Callable[[str], None], announce: Callable[[str], None]
) -> None:
    """Serve until stopped; `log` takes the server's lines, `announce` the one line that says
    what is served where. A missing token off loopback, a bad pool file or policy is one
    `ConsortiumError` before anything listens."""
    import uvicorn

    from consortium.coord.registry import build_coordinator, parse_substitutes
    from consortium.pool import Pool
    from consortium.pool.config import load_pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.telemetry import Telemetry
    from consortium.runtime.trace_queue import TraceQueue
    from consortium.serve.learn.learner import open_learner
    from consortium.serve.pool_reload import PoolFileWatch
    from consortium.serve.server import LOOPBACK, EnsembleServer

    token = os.environ.get(config.token_env) or None
    if token is None and config.host not in LOOPBACK:
        raise ConsortiumError(
            f"refusing to serve on {config.host} without a token: set ${config.token_env} "
            "(clients then send 'Authorization: Bearer <token>'), or bind to 127.0.0.1"
        )
    pool_config = load_pool(config.pool)
    substitutes = parse_substitutes(config.substitute)

    def build(spec: str) -> Coordinator:
        return build_coordinator(spec, pool_config, config.seed, substitutes)

    learner = (
        open_learner(config.learn, config.policy, config.traces, pool_config.names, build, log)
        if config.learn
        else None
    )
    coordinator = learner.coordinator if learner else build(config.policy)
    store = TraceStore(config.traces)
    settings = {"policy": config.policy, "name": config.name, "substitutes": substitutes}
    run_id = store.start_run("serve", pool=str(config.pool), config=settings)
    queue = TraceQueue(store)
    caller = Caller(Pool(pool_config), store, run_id, telemetry=Telemetry.from_env(), traces=queue)

    async def close() -> None:
        await caller.pool.aclose()  # the pool in use: a reload of the pool file may replace it
        queue.close()  # every queued row written before the run is marked finished
        store.finish_run(run_id, "finished")

    server = EnsembleServer(
        coordinator,
        caller,
        model_id=config.name,
        token=token,
        request_timeout=config.request_timeout,
        limits=config.limits,
        on_close=close,
        log=log,
        pool_file=PoolFileWatch(
            config.pool,
            lambda new: build_coordinator(
                learner.serving if learner else config.policy, new, config.seed, substitutes
            ),
            log,
        ),
        learner=learner,
    )
    standing_in = ", ".join(f"{new} in place of {old}" for old, new in substitutes.items())
    announce(
        f"serving {coordinator.name} as {config.name!r} on http://{config.host}:{config.port}/v1 "
        f"(auth: {'bearer token' if token else 'none, loopback only'}; traces: run {run_id}"
        f"{f'; substituted: {standing_in}' if standing_in else ''})"
    )
    uvicorn.run(
        server.app, host=config.host, port=config.port, log_level="warning", access_log=False
    )
