"""Train the TRINITY head on the replay pool and write reports/trinity-eval.{json,md}.

    python scripts/trinity_report.py --data ../shared/data/routerdc

Starts a replay server (split2_model7: 7 open models), trains on the in-distribution train splits
(MMLU, GSM8K, CMMLU, ARC-Challenge, HumanEval) with `consortium train trinity`, then scores the
policy, every single model, random routing and the oracle on the test splits of those datasets
(in-distribution) and of MATH prealgebra, MBPP and C-Eval (out-of-distribution) with
`consortium eval`. Each command it runs is printed and recorded in the Markdown report.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from consortium.replay.launch import ReplayServerProcess

ID = "mmlu,gsm8k,cmmlu,arc_challenge,humaneval"
OOD = "math_prealgebra,mbpp,ceval"


def run(command: list[str]) -> None:
    print("$", shlex.join(command), flush=True)
    subprocess.run(command, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="reports")
    parser.add_argument("--policy", default="policies/trinity-replay")
    parser.add_argument("--generations", type=int, default=60)
    parser.add_argument("--train-limit", type=int, default=0, help="questions per dataset (0: all)")
    parser.add_argument(
        "--test-limit", type=int, default=500, help="questions per dataset (0: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--compare",
        action="store_true",
        help="instead: sep-CMA-ES vs REINFORCE vs random search, 3 seeds, into "
        "OUT/optimizers.{md,json,png} (200 questions per dataset each side)",
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "consortium"]
    train_limit = f":limit={args.train_limit}" if args.train_limit else ""
    test_limit = f":limit={args.test_limit}" if args.test_limit else ""
    with ReplayServerProcess(args.data, "--sources", "split2") as server:
        pool = out / "replay-pool.toml"
        from consortium.config import dump_pool
        from consortium.replay.data import load_replay
        from consortium.replay.pool import replay_pool

        data = load_replay(args.data, sources=["split2"])
        pool.write_text(dump_pool(replay_pool(data, server.base_url, data.models["split2"])))
        train = [
            *cli,
            "train",
            "trinity",
            "--pool",
            str(pool),
            "--out",
            args.policy,
            "--generations",
            str(args.generations),
            "--seed",
            str(args.seed),
            "--tasks",
            f"replay:data={args.data}:split=train:datasets={ID}{train_limit}",
        ]
        evaluate = [
            *cli,
            "eval",
            "--pool",
            str(pool),
            "--policy",
            args.policy,
            "--tasks",
            f"replay:data={args.data}:split=test:datasets={ID},{OOD}{test_limit}:seed={args.seed}",
            "--json",
            str(out / "trinity-eval.json"),
            "--markdown",
            str(out / "trinity-eval.md"),
            "--png",
            str(out / "trinity-eval.png"),
            "--traces",
            f"sqlite:///{out / 'trinity-traces.db'}",
        ]
        if args.compare:
            compare = [
                *cli,
                "train",
                "compare",
                "--pool",
                str(pool),
                "--out",
                str(out / "optimizers"),
                "--generations",
                "30",
                "--seeds",
                "3",
                "--tasks",
                f"replay:data={args.data}:split=train:datasets={ID}:limit=200",
                "--test-tasks",
                f"replay:data={args.data}:split=test:datasets={ID}:limit=200",
            ]
            run(compare)
            return
        run(train)
        run(evaluate)
    report = json.loads((out / "trinity-eval.json").read_text())
    report["commands"] = [shlex.join(train), shlex.join(evaluate)]
    report["script"] = shlex.join(["python", "scripts/trinity_report.py", *sys.argv[1:]])
    (out / "trinity-eval.json").write_text(json.dumps(report, indent=2))
    table = (out / "trinity-eval.md").read_text()
    (out / "trinity-eval.md").write_text(
        f"# TRINITY on the replay pool\n\nMade by `{report['script']}`, which ran:\n\n"
        + "".join(f"    {c}\n" for c in report["commands"])
        + "\n"
        + table
    )


if __name__ == "__main__":
    main()
