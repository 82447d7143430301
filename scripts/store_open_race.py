"""Processes that open the same new SQLite trace store at once: how many fail. The race behind
tests/test_store_concurrency.py's flaky failure ("database is locked" while switching the new file
to WAL) shows only under load, so run this beside CPU burners, e.g.

    for i in 1 2 3 4; do timeout 300 python3 -c "while True: pass" & done
    python scripts/store_open_race.py --rounds 40

Prints the failed openers out of all (runtime.store retries the switch: expect 0).
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
from pathlib import Path
from typing import Any

from consortium.runtime.store import TraceStore


def open_store(url: str, start: Any) -> None:
    start.wait()
    TraceStore(url).close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="New stores to open (default 30).")
    parser.add_argument("--openers", type=int, default=8, help="Processes per store (default 8).")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            url = f"sqlite:///{Path(folder) / f'new-{round_}.db'}"
            start = context.Barrier(args.openers)
            openers = [
                context.Process(target=open_store, args=(url, start)) for _ in range(args.openers)
            ]
            for process in openers:
                process.start()
            for process in openers:
                process.join(timeout=120)
            failed += sum(process.exitcode != 0 for process in openers)
    print(f"failed openers: {failed} of {args.rounds * args.openers}")


if __name__ == "__main__":
    main()
