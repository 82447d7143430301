r"""HumanEval canonical solutions per second through the sandbox, beside plain `subprocess` with
no isolation, same programs, same machine, one run; prints the ratio.

    python bench/sandbox_throughput.py \
        --humaneval ../shared/data/benchmarks/humaneval/HumanEval.jsonl.gz

Both sides run the same 164 assembled programs (prompt + canonical solution + tests) with the same
number of worker threads; the sandbox side uses the strongest isolation available here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from consortium.sandbox.runner import Sandbox
from consortium.tasks.code import humaneval_program
from consortium.tasks.loaders import build_tasks, read_rows


def plain(program: str) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "main.py"
        path.write_text(program)
        return (
            subprocess.run(
                [sys.executable, str(path)], capture_output=True, timeout=60, check=False
            ).returncode
            == 0
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--humaneval", required=True, help="HumanEval.jsonl.gz")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    tasks = build_tasks("humaneval", read_rows(args.humaneval))
    programs = [humaneval_program(task, task.reference) for task in tasks]
    sandbox = Sandbox()

    def boxed(program: str) -> bool:
        return sandbox.run_python(program).ok

    rates: dict[str, list[float]] = {"plain subprocess": [], f"sandbox ({sandbox.isolation})": []}
    with ThreadPoolExecutor(args.workers) as pool:
        for _ in range(args.rounds):
            for name, run in zip(rates, (plain, boxed), strict=True):
                started = time.perf_counter()
                passed = sum(pool.map(run, programs))
                rates[name].append(len(programs) / (time.perf_counter() - started))
                assert passed == len(programs), f"{name}: {passed}/{len(programs)} passed"
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, rate in medians.items():
        print(
            f"{name:22s}: {rate:7.1f} programs/s (median of {args.rounds} rounds, "
            f"{args.workers} workers)"
        )
    baseline, isolated = medians.values()
    print(f"{'ratio':22s}: {isolated / baseline:7.3f}  (sandbox / plain)")


if __name__ == "__main__":
    main()
