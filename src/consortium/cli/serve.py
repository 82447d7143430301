"""`consortium serve`: the ensemble as one OpenAI-compatible model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.coord.spec_forms import POLICY_SPECS
from consortium.core.errors import ConsortiumError
from consortium.pool.config import PoolConfig, load_pool
from consortium.runtime.telemetry import Telemetry
from consortium.serve import headers

if TYPE_CHECKING:
    from consortium.coord.base import Coordinator

from consortium.cli.app import app, err_console
from consortium.cli.learn_options import (
    ExploreBudgetOption,
    ExploreOption,
    LearnLamOption,
    LearnOption,
    RefitEveryOption,
)
from consortium.cli.options import (
    DEFAULT_TRACES,
    PORT,
    PoolOption,
    SubstituteOption,
    TracesOption,
    in_range,
)

SERVE_HELP = f"""Serve the ensemble as one OpenAI-compatible model.

Any OpenAI client works unchanged (base_url http://HOST:PORT/v1, model NAME); each answer's
headers ({", ".join(headers.ANSWER_HEADERS)}) say what it took, who answered, why the policy
stopped and which models' calls failed, and every call is in the trace store.

Example:

  consortium serve --pool replay.toml --policy policies/trinity-replay --port 8000
  curl localhost:8000/v1/chat/completions -d '{{"model": "consortium", "messages": […]}}'
"""


@app.command(help=SERVE_HELP)
def serve(
    pool: PoolOption,
    policy: Annotated[
        str,
        typer.Option(
            help=f"What answers: {POLICY_SPECS}, or an evolve folder (its final strategy)."
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", callback=PORT)] = 8000,
    name: Annotated[str, typer.Option(help="The model id clients ask for.")] = "consortium",
    token_env: Annotated[
        str,
        typer.Option(
            help="Environment variable holding the bearer token clients must send; required "
            "unless the address is loopback."
        ),
    ] = "CONSORTIUM_SERVE_TOKEN",
    request_timeout: Annotated[
        float, typer.Option(help="Seconds a request may take before it is answered 504.")
    ] = 300.0,
    max_calls: Annotated[
        int | None,
        typer.Option(
            help="Cap on model calls per request; an answer-aware policy stops there with its "
            f"best answer so far ({headers.STOP}: budget hit after N calls).",
            callback=in_range("--max-calls", 0),
        ),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(help="Cap on tokens per request.", callback=in_range("--max-tokens", 0)),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            help="Cap on USD per request (as --max-calls: an answer-aware policy answers with "
            "what it has; 402 only when nothing was answered).",
            callback=in_range("--max-cost", 0),
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random router.")] = 0,
    substitute: SubstituteOption = None,
    traces: TracesOption = DEFAULT_TRACES,
    learn: LearnOption = None,
    refit_every: RefitEveryOption = 50,
    explore: ExploreOption = 0.0,
    explore_budget: ExploreBudgetOption = None,
    learn_lam: LearnLamOption = 0.0,
) -> None:
    import os

    import uvicorn

    from consortium.coord.registry import parse_substitutes
    from consortium.pool import Pool
    from consortium.runtime.budget import Limits
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.runtime.trace_queue import TraceQueue
    from consortium.serve.learn.learner import open_learner
    from consortium.serve.learn.settings import LearnSettings
    from consortium.serve.pool_reload import PoolFileWatch
    from consortium.serve.server import LOOPBACK, EnsembleServer

    token = os.environ.get(token_env) or None
    if token is None and host not in LOOPBACK:
        raise ConsortiumError(
            f"refusing to serve on {host} without a token: set ${token_env} (clients then send "
            "'Authorization: Bearer <token>'), or bind to 127.0.0.1"
        )
    config = load_pool(pool)
    substitutes = parse_substitutes(substitute or [])

    def log(line: str) -> None:
        err_console.print(line, highlight=False, markup=False)

    def build(spec: str) -> Coordinator:
        return _served_coordinator(spec, config, seed, substitutes)

    learning = LearnSettings.of(learn, refit_every, explore, explore_budget, learn_lam, seed)
    learner = open_learner(learning, policy, traces, config.names, build, log) if learning else None
    coordinator = learner.coordinator if learner else build(policy)
    store = TraceStore(traces)
    settings = {"policy": policy, "name": name, "substitutes": substitutes}
    run_id = store.start_run("serve", pool=str(pool), config=settings)
    queue = TraceQueue(store)
    caller = Caller(Pool(config), store, run_id, telemetry=Telemetry.from_env(), traces=queue)

    async def close() -> None:
        await caller.pool.aclose()  # the pool in use: a reload of the pool file may replace it
        queue.close()  # every queued row written before the run is marked finished
        store.finish_run(run_id, "finished")

    server = EnsembleServer(
        coordinator,
        caller,
        model_id=name,
        token=token,
        request_timeout=request_timeout,
        limits=Limits(max_calls=max_calls, max_tokens=max_tokens, max_cost=max_cost),
        on_close=close,
        log=log,
        pool_file=PoolFileWatch(
            pool,
            lambda new: _served_coordinator(
                learner.serving if learner else policy, new, seed, substitutes
            ),
            log,
        ),
        learner=learner,
    )
    standing_in = ", ".join(f"{new} in place of {old}" for old, new in substitutes.items())
    err_console.print(
        f"serving {coordinator.name} as {name!r} on http://{host}:{port}/v1 "
        f"(auth: {'bearer token' if token else 'none, loopback only'}; traces: run {run_id}"
        f"{f'; substituted: {standing_in}' if standing_in else ''})"
    )
    uvicorn.run(server.app, host=host, port=port, log_level="warning", access_log=False)


def _served_coordinator(
    policy: str, config: PoolConfig, seed: int, substitutes: dict[str, str]
) -> Coordinator:
    """A policy spec, or an evolve folder's final strategy."""
    from consortium.coord.registry import build_coordinator
    from consortium.evolve.strategies import Strategy, StrategyCoordinator

    state_path = Path(policy) / "state.json"
    if state_path.exists():
        if substitutes:
            raise ConsortiumError(
                f"--substitute: {policy} is an evolve folder; substitutes apply to an "
                "answer-aware policy folder"
            )
        state = json.loads(state_path.read_text())
        strategy = Strategy.model_validate(state["incumbent"])
        return StrategyCoordinator(strategy, lambda spec: build_coordinator(spec, config, seed))
    return build_coordinator(policy, config, seed, substitutes)
