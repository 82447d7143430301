"""Calls written per second into the trace store by 1 and 8 processes at once, PostgreSQL (a
throwaway local server) and SQLite (WAL, a local file), with a check that no row is lost or
written twice, in one run.

    python bench/store_writers.py --calls 300

Each writer records --calls calls one by one through `TraceStore.record_call` (one transaction
each, as a running job does), all writers released together by a barrier. The rate is all rows
over the wall time from the release to the last writer's end.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from consortium.runtime.pgserver import PostgresServer
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import CallRecord


def writer(url: str, run_id: str, index: int, calls: int, start: Any, done: Any) -> None:
    store = TraceStore(url)
    start.wait()
    began = time.perf_counter()
    for number in range(calls):
        store.record_call(
            CallRecord(
                run_id=run_id,
                model=f"model-{index}",
                messages=[{"role": "user", "content": f"writer {index} call {number}"}],
                response="answer",
                task_id=f"{index}:{number}",
            )
        )
    done.put((began, time.perf_counter()))
    store.close()


def rate(url: str, writers: int, calls: int) -> float:
    store = TraceStore(url)
    run_id = store.start_run("bench")
    context = multiprocessing.get_context("spawn")
    start, done = context.Barrier(writers), context.Queue()
    processes = [
        context.Process(target=writer, args=(url, run_id, i, calls, start, done))
        for i in range(writers)
    ]
    for process in processes:
        process.start()
    spans = [done.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
    rows = list(store.iter_calls(run_id))
    expected = {f"{i}:{n}" for i in range(writers) for n in range(calls)}
    assert len(rows) == len(expected) == len({r["id"] for r in rows}), "lost or repeated rows"
    assert {r["task_id"] for r in rows} == expected
    store.close()
    return len(rows) / (max(end for _, end in spans) - min(begin for begin, _ in spans))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per writer")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; {args.calls} calls per writer, one per transaction\n")
    print("| store | 1 writer (calls/s) | 8 writers (calls/s) | 8 vs 1 |")
    print("|---|---|---|---|")
    with PostgresServer() as server, tempfile.TemporaryDirectory() as folder:
        stores = {
            "PostgreSQL 15 (local server)": [server.create_database(f"w{n}") for n in (1, 8)],
            "SQLite (WAL, local file)": [f"sqlite:///{Path(folder) / f'w{n}.db'}" for n in (1, 8)],
        }
        for name, (one, eight) in stores.items():
            single, many = rate(one, 1, args.calls), rate(eight, 8, args.calls)
            print(f"| {name} | {single:.0f} | {many:.0f} | {many / single:.2f} |")


if __name__ == "__main__":
    main()
