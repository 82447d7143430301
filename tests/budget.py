"""A pytest plugin that writes where the suite's CPU goes (`scripts/test_budget.py` reads it).

With `CONSORTIUM_TEST_BUDGET=DIR` set, each pytest process (every xdist worker, or the one
process without xdist) appends JSON lines to `DIR/<worker>.jsonl`: the CPU seconds (user + sys)
of each test's set-up, call and tear-down, and of each fixture's set-up, counting this process
and its child processes (a server a fixture keeps up is counted in the tests it serves). Unset,
the plugin records nothing."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import IO, Any

import psutil
import pytest

BUDGET_ENV = "CONSORTIUM_TEST_BUDGET"


def cpu_seconds() -> float:
    """User + sys CPU of this process, of its waited-for children and of the descendants alive
    now (a server a fixture keeps up is counted while it works, not only when it stops)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            total += times.user + times.system
    return total


class BudgetRecorder:
    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def write(self, **row: Any) -> None:
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase(item, "setup"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase(item, "call"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase(item, "teardown"))

    def _phase(self, item: pytest.Item, phase: str) -> Generator[None, None, None]:
        start, started = cpu_seconds(), time.monotonic()
        try:
            return (yield)
        finally:
            self.write(kind="test", file=item.path.name, test=item.nodeid, phase=phase,
                       cpu=cpu_seconds() - start, wall=time.monotonic() - started)  # fmt: skip

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, Any, Any]:
        start = cpu_seconds()
        try:
            return (yield)
        finally:
            node = request.node
            where = node.path.name if hasattr(node, "path") and node.path else ""
            self.write(kind="fixture", fixture=fixturedef.argname, scope=fixturedef.scope,
                       file=where, cpu=cpu_seconds() - start)  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    folder = os.environ.get(BUDGET_ENV)
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = (Path(folder) / f"{worker}.jsonl").open("a")
    config.pluginmanager.register(BudgetRecorder(out), "consortium-budget")
