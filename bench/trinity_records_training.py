"""Episodes per second of TRINITY head training on a records folder, for the current code and for
the code of an earlier commit (default fe64538, before the refactor that took the decision logic
out of episodes.py and played the deployed decision function instead), side by side.

    python bench/trinity_records_training.py --records records/gsm8k --generations 3 --rounds 5

What is timed is what `consortium coordinate` does for each TRINITY row: sep-CMA-ES on the replay
simulation of the records (`train_head(Episodes(table), train split, "es", λ, cost unit,
Budget)`), each candidate head scored by its greedy episodes on a shared minibatch; an episode is
one question played to its stop. A training of G generations plays G × popsize 16 × minibatch 64
episodes.

The earlier code runs from a temporary `git worktree` of the commit (PYTHONPATH=WORKTREE/src),
removed at the end. Each round starts one child process per code, in alternating order; a child
builds the outcome table (not timed), then times `--repeats` trainings on it. Episodes/s is the
budget's episodes over the training's wall time (and over the process's CPU time, which leaves out
the wait for a core on a shared machine); each code's figure is the median over all its trainings,
and the ratio is current / before (target ≥ 0.5). The two codes' heads differ (their decision
functions are not the same), so each is timed on its own trajectory at the same budget.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BEFORE = "fe64538"

# Where each name lives, newest first: the modules moved after the earlier commit, which has only
# consortium.coordinate.
LOCATIONS: dict[str, tuple[str, ...]] = {
    "outcome_table": ("consortium.evaluation.recorded.tables", "consortium.coordinate.tables"),
    "Episodes": ("consortium.evaluation.recorded.episodes", "consortium.coordinate.episodes"),
    "train_accuracy": ("consortium.evaluation.recorded.runs", "consortium.coordinate.runs"),
    "train_cost": ("consortium.evaluation.recorded.runs", "consortium.coordinate.runs"),
    "Budget": ("consortium.train.trinity.recorded_turns", "consortium.coordinate.training"),
    "train_head": ("consortium.train.trinity.recorded_turns", "consortium.coordinate.training"),
}


def locate(name: str) -> Any:
    for module_name in LOCATIONS[name]:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and module_name.startswith(error.name):
                continue  # this code keeps it elsewhere
            raise
        return getattr(module, name)
    raise ImportError(f"{name} is in none of {', '.join(LOCATIONS[name])}")


def measure(records: Path, generations: int, repeats: int, lam: float, seed: int) -> None:
    """The child: one JSON line with this code's timed trainings."""
    import numpy as np

    import consortium
    from consortium.records.store import load_records

    table = locate("outcome_table")(load_records(records))
    train = table.indices("train")
    best = int(np.argmax(locate("train_accuracy")(table)))
    cost_unit = float(locate("train_cost")(table)[best]) or 1.0
    episodes = locate("Episodes")(table)
    budget = locate("Budget")(generations=generations)
    train_head = locate("train_head")
    wall, cpu = [], []
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        train_head(episodes, train, "es", lam, cost_unit, budget, seed)
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    shown = {
        "package": consortium.__file__,
        "dataset": table.dataset,
        "models": table.n_models,
        "questions": len(table.question_ids),
        "train": len(train),
        "episodes": budget.episodes,
        "wall_s": wall,
        "cpu_s": cpu,
    }
    print(json.dumps(shown))


def run_child(src: Path, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    command = [
        sys.executable, __file__, "--child", "--records", str(args.records),
        "--generations", str(args.generations), "--repeats", str(args.repeats),
        "--lam", str(args.lam), "--seed", str(args.seed),
    ]  # fmt: skip
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=scratch,  # nothing the child might write lands in a checkout
        env={**os.environ, "PYTHONPATH": str(src)},
    )
    if done.returncode != 0:
        sys.exit(f"error: the measurement with PYTHONPATH={src} failed:\n{done.stderr[-2000:]}")
    shown: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(shown["package"]).resolve().is_relative_to(src.resolve()):
        sys.exit(f"error: the child imported {shown['package']}, not the code under {src}")
    return shown


def git(*arguments: str) -> None:
    done = subprocess.run(["git", "-C", str(REPO), *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: git {' '.join(arguments)}: {done.stderr.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--records", type=Path, default=Path("records/gsm8k"))
    parser.add_argument("--generations", type=int, default=3, help="per training (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="timed trainings per child")
    parser.add_argument("--rounds", type=int, default=5, help="child processes per code")
    parser.add_argument("--lam", type=float, default=0.0, help="λ of the reward (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--commit", default=BEFORE, help=f"the earlier code (default {BEFORE})")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.generations, args.repeats, args.rounds) < 1:
        parser.error("--generations, --repeats and --rounds must be at least 1")
    if args.child:
        measure(args.records, args.generations, args.repeats, args.lam, args.seed)
        return
    args.records = args.records.resolve()
    if not (args.records / "manifest.json").is_file():
        parser.error(f"--records: {args.records} is not a records folder (no manifest.json)")

    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="trinity-records-training-"))
    tree = scratch / "before"
    git("worktree", "add", "--detach", str(tree), args.commit)
    codes = {"current": REPO / "src", f"before ({args.commit})": tree / "src"}
    shown: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    try:
        for round_ in range(args.rounds):
            order = list(codes) if round_ % 2 == 0 else list(reversed(codes))
            for name in order:
                shown[name].append(run_child(codes[name], args, scratch))
    finally:
        git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()[0]

    first = shown["current"][0]
    episodes = first["episodes"]
    print(
        f"records {args.records} ({first['dataset']}: {first['models']} models, "
        f"{first['questions']} questions, {first['train']} on the train split); sep-CMA-ES, "
        f"{args.generations} generations x 16 x 64 = {episodes:,} episodes a training, "
        f"λ={args.lam:g}, seed {args.seed}; {args.rounds} rounds x {args.repeats} trainings per "
        f"code; load average {load_before:.1f} before, {load_after:.1f} after"
    )
    print("| code | trainings | episodes/s (wall) | episodes/s (CPU) | s a training (wall) |")
    print("|---|---|---|---|---|")
    rates: dict[str, tuple[float, float]] = {}
    for name, children in shown.items():
        wall = [s for child in children for s in child["wall_s"]]
        cpu = [s for child in children for s in child["cpu_s"]]
        rates[name] = (episodes / statistics.median(wall), episodes / statistics.median(cpu))
        print(
            f"| {name} | {len(wall)} | {rates[name][0]:,.0f} | {rates[name][1]:,.0f} | "
            f"{statistics.median(wall):.2f} |"
        )
    current, before = rates["current"], rates[f"before ({args.commit})"]
    print(
        f"ratio current / before: wall {current[0] / before[0]:.2f}, "
        f"CPU {current[1] / before[1]:.2f} (target ≥ 0.5)"
    )


if __name__ == "__main__":
    main()
