from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from consortium.pool import Pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.budget import Budget
from consortium.runtime.cache import ResponseCache
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.smallmodels.llamacpp import ServerSettings

LIVE_SETTINGS = ServerSettings(max_tokens=32, n_ctx=2048)
"""The live llama.cpp pool's settings: short answers; a context that holds a debate's turns."""


class ReplayServers:
    """Replay servers started once per session (per xdist worker) and shared by every test that
    asks for the same one: `with replay_servers(data, *args, records=[folder]) as server:` starts
    it on first use and leaves it running on exit. The replay keeps no state between requests
    (which sample answers is the request's), so tests share a server safely; a test that reads
    `stats()` or injects faults starts its own `ReplayServerProcess`. `--write-pool PATH` is
    honoured per call: the pool the shared server wrote is copied to PATH."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.running: dict[tuple[str, ...], tuple[ReplayServerProcess, Path]] = {}

    @contextmanager
    def __call__(
        self, data: Path | None, *args: str, records: Sequence[Path] = ()
    ) -> Iterator[ReplayServerProcess]:
        arguments = list(args)
        wanted_pool: Path | None = None
        if "--write-pool" in arguments:
            at = arguments.index("--write-pool")
            wanted_pool = Path(arguments[at + 1])
            del arguments[at : at + 2]
        key = (str(data), *arguments, *(str(Path(folder).resolve()) for folder in records))
        if key not in self.running:
            pool = self.scratch / f"pool-{len(self.running)}.toml"
            server = ReplayServerProcess(
                data, *arguments, "--write-pool", str(pool), records=records
            )
            self.running[key] = server.start(), pool
        server, pool = self.running[key]
        if wanted_pool is not None:
            shutil.copyfile(pool, wanted_pool)
        yield server

    def stop_all(self) -> None:
        for server, _ in self.running.values():
            server.stop()
        self.running.clear()


def run_consortium(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`consortium ARGS` run in this process (click's CliRunner isolation: its own stdin, stdout,
    stderr and `env` added to the environment), read back as a finished process. The package is
    imported once per session instead of once per command; a test of the entry point itself,
    its exit on a signal or its environment at start runs a real process instead."""
    from click.testing import CliRunner

    from consortium.cli.main import main

    code: int = 0
    with CliRunner().isolation(env=dict(env or {})) as (out, err, _):
        with contextlib.chdir(cwd or Path.cwd()):
            try:
                main(args)
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["consortium", *args], code, stdout, stderr)


def required(module: str) -> ModuleType:
    """A dependency the suite needs, imported; missing, the test fails and says how to install it
    (the suite never skips a test silently)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        pytest.fail(f"{module} is not installed ({error}): make install", pytrace=False)


def replay_caller(
    data: ReplayData,
    base_url: str,
    store: TraceStore,
    models: list[str] | None = None,
    *,
    budget: Budget | None = None,
    cache: ResponseCache | None = None,
) -> Caller:
    pool = Pool(replay_pool(data, base_url, models or data.models["split2"]))
    run_id = store.start_run("test", pool=data.description())
    return Caller(pool, store, run_id, budget=budget, cache=cache)


def benchmarks_dir() -> Path:
    """The public benchmark files beside the checkout (or $CONSORTIUM_BENCHMARKS)."""
    default = Path(__file__).resolve().parents[1].parent / "shared/data/benchmarks"
    return Path(os.environ.get("CONSORTIUM_BENCHMARKS", default)).resolve()


WALL_TIME = {"seconds", "seconds_per_task"}


def untimed(value: Any) -> Any:
    """`value` (a report read from JSON) without its wall-clock figures: the one thing a rerun,
    a resumed run or the same run on another executor never repeats."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key not in WALL_TIME}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value


class SharedRecords:
    """Records folders imported from the real recorded outputs once per test session, whichever
    xdist worker asks first (a file lock per folder): the GSM8K and HumanEval imports run
    thousands of programs in the sandbox, so no worker repeats one another made."""

    def __init__(self, real: Path, root: Path) -> None:
        self.real = real
        self.root = root

    def __call__(self, name: str, limit: int | None, *, leave_out: tuple[str, ...] = ()) -> Path:
        """The first `limit` questions of corpus `name` (None: all), without the models in
        `leave_out`."""
        from filelock import FileLock

        from consortium.records import write_records
        from consortium.records.build import build_dataset
        from consortium.records.corpora import CREATED_BY, RECIPES

        key = "-".join([name, str(limit), *sorted(leave_out)])
        folder = self.root / key
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root / f"{key}.lock")):
            if not (folder / "manifest.json").is_file():
                recipe = RECIPES[name]
                parts = [
                    part
                    for part in recipe.parts(self.real)
                    if part.imported.files[0].model not in leave_out
                ]
                manifest, rows = build_dataset(
                    recipe.dataset, recipe.kind, parts, licence=recipe.licence,
                    created_by=CREATED_BY, notes=recipe.notes, limit=limit,
                )  # fmt: skip
                write_records(folder, manifest, rows)
        return folder


def recorded_first_samples(folder: Path) -> dict[tuple[str, str], str]:
    """Each (question id, model)'s first recorded response in a records folder."""
    from consortium.records import load_records

    rows = load_records(folder).table.select(["question_id", "model", "sample", "response"])
    return {
        (r["question_id"], r["model"]): r["response"] or ""
        for r in rows.to_pylist()
        if r["sample"] == 0
    }


async def run_on_records(
    folder: Path,
    coordinators: list[Any],
    tasks: list[Any],
    grader: Any,
    store: TraceStore,
    pool_file: Path,
) -> tuple[list[list[Any]], str]:
    """Each coordinator's results on `tasks`, run one after the other over the HTTP replay of a
    records folder (a server of its own, its pool written to `pool_file`), traced in `store`;
    and the run's id."""
    from consortium.evaluation.runner import run_policy
    from consortium.pool.config import load_pool
    from consortium.replay.launch import ReplayServerProcess

    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[folder]):
        pool = Pool(load_pool(pool_file))
        caller = Caller(pool, store, store.start_run("test", pool=f"records/{folder.name}"))
        try:
            results = [
                await run_policy(coordinator, tasks, grader, caller, concurrency=4)
                for coordinator in coordinators
            ]
        finally:
            await pool.aclose()
    return results, caller.run_id
