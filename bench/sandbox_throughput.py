r"""HumanEval canonical solutions per second through the sandbox (a process per program, and a
session: one sandbox per worker thread, a fork per program), beside plain `subprocess` with no
isolation, same programs, same machine, one run; prints the ratios.

    python bench/sandbox_throughput.py \
        --humaneval ../shared/data/benchmarks/humaneval/HumanEval.jsonl.gz

Both sides run the same 164 assembled programs (prompt + canonical solution + tests) with the same
number of worker threads; the sandbox side uses the strongest isolation available here. The plain
side runs them the way the sandbox does, minus the isolation: the same interpreter with `-I -S`
(the sandbox's interpreter sees no site-packages, so it starts with about 30 modules where `-I`
alone imports about 100 through site's .pth files and took 34 ms a start against the sandbox's
14 ms: the bare side then measured site's imports, not the isolation), a
new session (on a kernel with scheduler autogroups a new session is a new scheduling group: with
the parent's group the plain side got a smaller CPU share on a busy machine than the sandbox and
looked slower), a throwaway directory. Rounds alternate the two sides; medians of `--rounds`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from consortium.sandbox.runner import Sandbox
from consortium.sandbox.session import ThreadSessions
from consortium.tasks.code import humaneval_program
from consortium.tasks.loaders import build_tasks, read_rows


def plain(python: Path, program: str) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "main.py"
        path.write_text(program)
        done = subprocess.run(
            [str(python), "-I", "-S", "main.py"],
            cwd=folder,
            capture_output=True,
            timeout=60,
            check=False,
            start_new_session=True,
        )
        return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--humaneval", required=True, help="HumanEval.jsonl.gz")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    tasks = build_tasks("humaneval", read_rows(args.humaneval))
    programs = [humaneval_program(task, task.reference) for task in tasks]
    sandbox = Sandbox()

    def bare(program: str) -> bool:
        return plain(sandbox.python, program)

    def boxed(program: str) -> bool:
        return sandbox.run_python(program).ok

    sessions = ThreadSessions(sandbox)

    def in_session(program: str) -> bool:
        return sessions.run_python(program).ok

    sides = {
        "plain subprocess": bare,
        f"sandbox ({sandbox.isolation})": boxed,
        f"session ({sandbox.isolation})": in_session,
    }
    rates: dict[str, list[float]] = {name: [] for name in sides}
    with sessions, ThreadPoolExecutor(args.workers) as pool:
        for _ in range(args.rounds):
            for name, run in sides.items():
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
    baseline, isolated, shared = medians.values()
    print(f"{'ratio':22s}: {isolated / baseline:7.3f}  (sandbox / plain)")
    print(f"{'ratio':22s}: {shared / baseline:7.3f}  (session / plain)")


if __name__ == "__main__":
    main()
