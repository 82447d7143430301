"""`consortium replay serve`: the recorded models behind a real OpenAI-compatible API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import err_console, replay_app
from consortium.cli.options import PORT
from consortium.core.errors import ConsortiumError


@replay_app.command("serve")
def replay_serve(
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            envvar="CONSORTIUM_REPLAY_DATA",
            help="The recorded data folder (routerdc: split2_model7/, routerbench_zs/).",
        ),
    ] = None,
    records: Annotated[
        list[Path] | None,
        typer.Option(
            "--records",
            help="A records folder (consortium records import); repeat for several. Served "
            "with their texts: the k-th ask for a question gets the k-th recorded sample.",
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", callback=PORT)] = 8765,
    seed: Annotated[int, typer.Option(help="Seed of the replayed draws.")] = 0,
    coupling: Annotated[
        str,
        typer.Option(
            help="shared: one draw per question for all models; independent: one per model."
        ),
    ] = "shared",
    latency_base: Annotated[float, typer.Option(help="Declared seconds per call.")] = 0.0,
    latency_per_token: Annotated[
        float, typer.Option(help="Declared seconds per output token.")
    ] = 0.0,
    error_rate: Annotated[
        float, typer.Option(help="Fraction of requests failed on purpose.")
    ] = 0.0,
    error_codes: Annotated[
        str, typer.Option(help="HTTP codes of injected errors.")
    ] = "500,503,429",
    timeout_rate: Annotated[
        float, typer.Option(help="Fraction of requests that stall for --hang-seconds.")
    ] = 0.0,
    hang_seconds: Annotated[float, typer.Option(help="How long a stalled request waits.")] = 30.0,
    fault_seed: Annotated[int, typer.Option(help="Seed of the injected faults.")] = 0,
    garbage_rate: Annotated[
        float,
        typer.Option(help="Fraction of requests answered 200 with a malformed body or no choices."),
    ] = 0.0,
    drop_rate: Annotated[
        float,
        typer.Option(help="Fraction of requests whose connection drops halfway through the body."),
    ] = 0.0,
    slow_rate: Annotated[
        float,
        typer.Option(help="Fraction of requests whose body trickles out in 4 pieces."),
    ] = 0.0,
    slow_seconds: Annotated[
        float, typer.Option(help="Pause between the pieces of a slow body.")
    ] = 0.2,
    write_pool: Annotated[
        Path | None, typer.Option(help="Write a pool file for this server's models, then serve.")
    ] = None,
    exit_with_parent: Annotated[
        bool,
        typer.Option(
            help="Stop when the starting process exits (used by the launcher).", hidden=True
        ),
    ] = False,
    sources: Annotated[
        str,
        typer.Option(
            help="Recorded sources to serve: split2 (7 open models), routerbench (11 models)."
        ),
    ] = "split2,routerbench",
) -> None:
    """Serve the recorded models over a real OpenAI-compatible API.

    Endpoints: /v1/models, /v1/chat/completions (streaming too), /replay/stats.

    Example:

      consortium replay serve --data ../shared/data/routerdc --write-pool pool.toml

      consortium replay serve --records records/gsm8k --records records/math --port 8766
    """
    from consortium.replay.pool import write_pool_file
    from consortium.replay.records import served_data
    from consortium.replay.server import FaultConfig, LatencyModel, ReplayApp, serve
    from consortium.replay.server import exit_with_parent as watch_parent

    if coupling not in ("shared", "independent"):
        raise ConsortiumError("--coupling must be shared or independent")
    codes = _error_codes(error_codes)
    recorded = served_data(data, records or [], _sources(sources))  # type: ignore[arg-type]
    if write_pool is not None:
        write_pool_file(write_pool, recorded, f"http://{host}:{port}/v1")
        err_console.print(f"wrote {write_pool}")
    server = ReplayApp(
        recorded,
        seed=seed,
        coupling=coupling,  # type: ignore[arg-type]
        latency=LatencyModel(latency_base, latency_per_token),
        faults=FaultConfig(
            error_rate=error_rate,
            error_codes=codes,
            timeout_rate=timeout_rate,
            hang_seconds=hang_seconds,
            garbage_rate=garbage_rate,
            seed=fault_seed,
            drop_rate=drop_rate,
            slow_rate=slow_rate,
            slow_seconds=slow_seconds,
        ),
    )
    err_console.print(
        f"replay server: {len(recorded.all_models)} models, {len(recorded.records)} recorded "
        f"questions, on http://{host}:{port}/v1 ({recorded.description()})"
    )
    if exit_with_parent:
        watch_parent()
    serve(server, host, port)


def _error_codes(error_codes: str) -> tuple[int, ...]:
    try:
        return tuple(int(code) for code in error_codes.split(",") if code)
    except ValueError:
        raise ConsortiumError(
            f"--error-codes: expected numbers like 500,503,429, got {error_codes!r}"
        ) from None


def _sources(sources: str) -> list[str]:
    from consortium.replay.data import SOURCES

    chosen = [name for name in sources.split(",") if name]
    unknown = [name for name in chosen if name not in SOURCES]
    if unknown or not chosen:
        raise ConsortiumError(f"--sources: expected some of {', '.join(SOURCES)}, got {sources!r}")
    return chosen
