"""`consortium serve`: the ensemble as one OpenAI-compatible model."""

from __future__ import annotations

from typing import Annotated

import typer

from consortium.cli.app import app, err_console
from consortium.cli.learn_options import (
    ExploreBudgetOption,
    ExploreOnOption,
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
from consortium.coord.spec_forms import POLICY_SPECS
from consortium.serve import headers

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
    explore_on: ExploreOnOption = "answer",
    explore_budget: ExploreBudgetOption = None,
    learn_lam: LearnLamOption = 0.0,
) -> None:
    from consortium.runtime.budget import Limits
    from consortium.serve.learn.settings import LearnSettings
    from consortium.serve.run import ServeConfig, serve_ensemble

    config = ServeConfig(
        pool=pool,
        policy=policy,
        host=host,
        port=port,
        name=name,
        token_env=token_env,
        request_timeout=request_timeout,
        limits=Limits(max_calls=max_calls, max_tokens=max_tokens, max_cost=max_cost),
        seed=seed,
        substitute=tuple(substitute or ()),
        traces=traces,
        learn=LearnSettings.of(
            learn, refit_every, explore, explore_on, explore_budget, learn_lam, seed
        ),
    )
    serve_ensemble(config, log=_log, announce=err_console.print)


def _log(line: str) -> None:
    err_console.print(line, highlight=False, markup=False)
