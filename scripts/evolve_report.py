"""Run the self-improvement loop on the replay pool and write reports/evolve/.

    python scripts/evolve_report.py --data ../shared/data/routerdc

Starts a replay server with RouterBench's 11 models (recorded responses, list prices), then runs
`consortium evolve` on ARC-Challenge, Winogrande and MBPP: the train split, halved by task id,
gives the tuning and the held-out tasks; the test split is kept for the final comparison, which
no decision sees. The command is printed and written at the top of the report.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from consortium.pool.config import dump_pool
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="reports/evolve")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=600, help="tuning tasks per round")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = f"replay:data={args.data}:source=routerbench"
    with ReplayServerProcess(args.data, "--sources", "routerbench") as server:
        data = load_replay(args.data, sources=["routerbench"])
        pool = out / "replay-pool.toml"
        pool.write_text(dump_pool(replay_pool(data, server.base_url, data.models["routerbench"])))
        command = [
            sys.executable, "-m", "consortium", "evolve",
            "--pool", str(pool), "--out", str(out), "--rounds", str(args.rounds),
            "--seed", str(args.seed), "--batch", str(args.batch),
            "--traces", f"sqlite:///{out / 'traces.db'}",
            "--tasks", f"{tasks}:split=train", "--final", f"{tasks}:split=test",
        ]  # fmt: skip
        shown = shlex.join(["consortium", *command[3:]])
        print("$", shown, flush=True)
        subprocess.run(command, check=True)
    report = out / "report.md"
    report.write_text(
        report.read_text().replace("# Evolve report\n", f"# Evolve report\n\n`{shown}`\n", 1)
    )


if __name__ == "__main__":
    main()
