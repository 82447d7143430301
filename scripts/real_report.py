"""Real small language models in every collaboration pattern: `make real`.

    python scripts/real_report.py --benchmarks ../shared/data/benchmarks

Starts llama.cpp's server with SmolLM2-135M-Instruct and Gemma 3 270M (`consortium local`), then
runs each single model, vote, MoA, debate, reflect, TRINITY with all three roles (an untrained,
randomly initialised head) and the Conductor (SmolLM2 writing workflows in free text, falling
back to Gemma, its only worker, when a workflow does not parse) on small seeded samples: generated
two-number arithmetic, GSM8K and HumanEval (run in the sandbox). Writes reports/real-lms.md,
.json and .png.

The models are tiny: the figures show real behaviour and cost on this machine, not quality.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from consortium.coord.registry import build_coordinator
from consortium.coord.trinity.encoder import SentenceEncoder, StandardizedEncoder, Standardizer
from consortium.coord.trinity.head import ROLES
from consortium.coord.trinity.policy import HeadSetup, default_encoder, save_policy
from consortium.core.answers import find_verdict
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.runtime.store import TraceStore
from consortium.smallmodels.files import GEMMA3, SMOLLM2
from consortium.smallmodels.llamacpp import LlamaCppServers, ServerSettings
from consortium.tasks.base import TaskSet
from consortium.tasks.registry import load_task_set
from made_by import made_by

POOL_NAME = "llama.cpp server, SmolLM2-135M-Instruct (Q4_1) + Gemma 3 270M (Q4_K_M), 1 thread each"


@dataclass
class Row:
    tasks: str
    policy: str
    n: int
    correct: int
    calls: int
    tokens: int
    errors: int
    wall_s: float
    note: str = ""

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def interval(self) -> tuple[float, float]:
        """Wilson 95 % interval of the accuracy."""
        if not self.n:
            return 0.0, 0.0
        z, p, n = 1.96, self.accuracy, self.n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


def untrained_trinity(directory: Path, models: list[str], seed: int) -> Path:
    """A TRINITY policy over the real pool with a random head (all three roles, up to 3 turns)."""
    encoder = StandardizedEncoder(
        default_encoder(SentenceEncoder.name, directory / "features.db"),
        Standardizer(np.zeros(SentenceEncoder.dim), np.ones(SentenceEncoder.dim)),
    )
    setup = HeadSetup(encoder, models, max_turns=3, roles=ROLES)
    vector = np.random.default_rng(seed).normal(0.0, 1.0, setup.n_params)
    save_policy(directory, vector, setup, {"training": f"none (random head, seed {seed})"})
    return directory


def evaluate(
    task_sets: dict[str, TaskSet], policies: list[str], pool: LlamaCppServers, traces: Path
) -> tuple[list[Row], dict[str, int]]:
    """Each policy on each task set: one `run_evaluation` each (timed), traced in `traces`."""
    config = pool.pool()
    rows: list[Row] = []
    run_ids: list[str] = []
    for label, task_set in task_sets.items():
        for spec in policies:
            coordinator = build_coordinator(spec, config)
            name = "trinity (untrained, 3 roles)" if Path(spec).is_dir() else spec
            coordinator.name = name
            started = time.perf_counter()
            evaluated = run_evaluation(
                EvalConfig(
                    config,
                    task_set,
                    (coordinator,),
                    baselines=False,
                    concurrency=2,
                    traces=f"sqlite:///{traces}",
                    kind="real-report",
                )
            )
            results = evaluated.per_policy[name]
            run_ids.append(evaluated.run_id)
            fallbacks = sum(
                r.outcome is not None
                and r.outcome.workflow is not None
                and any("fallback" in note for note in r.outcome.workflow.notes)
                for r in results
            )
            rows.append(
                Row(
                    label,
                    name,
                    len(results),
                    sum(r.grade.correct for r in results),
                    sum(r.calls for r in results),
                    sum(r.tokens for r in results),
                    sum(r.error is not None for r in results),
                    time.perf_counter() - started,
                    f"{fallbacks} workflows unparsed → fallback"
                    if spec.startswith("conductor")
                    else "",
                )
            )
            print(f"{label:12} {name:34} {rows[-1].correct}/{rows[-1].n}", flush=True)
    store = TraceStore(f"sqlite:///{traces}")
    verdicts = [
        find_verdict(call["response"] or "")
        for run_id in run_ids
        for call in store.iter_calls(run_id)
        if call["role"] == "verifier" and call["error"] is None
    ]
    store.close()
    counts = {
        "verifier_calls": len(verdicts),
        "parsed": sum(v is not None for v in verdicts),
        "accept": verdicts.count("ACCEPT"),
        "revise": verdicts.count("REVISE"),
    }
    return rows, counts


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r.tasks for r in rows))
    policies = list(dict.fromkeys(r.policy for r in rows))
    figure, axis = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(sets)
    for index, label in enumerate(sets):
        chosen = {r.policy: r for r in rows if r.tasks == label}
        values = [100 * chosen[p].accuracy for p in policies]
        low = [100 * (chosen[p].accuracy - chosen[p].interval()[0]) for p in policies]
        high = [100 * (chosen[p].interval()[1] - chosen[p].accuracy) for p in policies]
        axis.bar(
            [i + index * width for i in range(len(policies))],
            values,
            width,
            yerr=[low, high],
            capsize=2,
            label=label,
        )
    axis.set_xticks([i + width * (len(sets) - 1) / 2 for i in range(len(policies))])
    axis.set_xticklabels([p[:28] for p in policies], rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("accuracy (%), Wilson 95 % interval")
    axis.set_title(POOL_NAME, fontsize=8)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def markdown(rows: list[Row], counts: dict[str, int], command: str, started: float) -> str:
    lines = [
        "# Real small language models in every collaboration pattern",
        "",
        f"Made by `{command}` in {time.perf_counter() - started:.0f} s on this machine. "
        f"Pool: {POOL_NAME}. Prices are 0 (local). The models are tiny: this shows real "
        "behaviour, calls and time, not quality.",
        "",
        "| tasks | policy | right | accuracy [95 % CI] | calls | tokens | errors | wall s | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        low, high = r.interval()
        lines.append(
            f"| {r.tasks} | {r.policy} | {r.correct}/{r.n} | {100 * r.accuracy:.1f} "
            f"[{100 * low:.1f}, {100 * high:.1f}] | {r.calls} | {r.tokens} | {r.errors} "
            f"| {r.wall_s:.0f} | {r.note} |"
        )
    parsed = counts["parsed"]
    total = counts["verifier_calls"]
    lines += [
        "",
        f"TRINITY's Verifier turns: {total}; a verdict was stated in {parsed} "
        f"({100 * parsed / max(total, 1):.0f} %): {counts['accept']} ACCEPT, "
        f"{counts['revise']} REVISE; the rest count as REVISE.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--benchmarks", required=True, help="the public benchmark files")
    parser.add_argument("--out", default="reports")
    parser.add_argument("--arithmetic", type=int, default=24)
    parser.add_argument("--gsm8k", type=int, default=8)
    parser.add_argument("--humaneval", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # A plain `kill` unwinds the `with` blocks, so the llama.cpp servers stop too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    out = Path(args.out)
    benchmarks = Path(args.benchmarks)
    task_sets = {
        "arithmetic": load_task_set(f"arithmetic:n={args.arithmetic}:seed={args.seed}"),
        "gsm8k": load_task_set(
            f"gsm8k:path={benchmarks / 'gsm8k/test.jsonl'}:limit={args.gsm8k}:seed={args.seed}"
        ),
        "humaneval": load_task_set(
            f"humaneval:path={benchmarks / 'humaneval/HumanEval.jsonl.gz'}"
            f":limit={args.humaneval}:seed={args.seed}"
        ),
    }
    models = [SMOLLM2.name, GEMMA3.name]
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "real-lms-traces.db"
    traces.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        trinity = untrained_trinity(work / "trinity", models, args.seed)
        policies = [
            f"single:{SMOLLM2.name}",
            f"single:{GEMMA3.name}",
            "workflow:judge-vote",
            "workflow:moa",
            "workflow:debate",
            "workflow:reflect",
            str(trinity),
            f"conductor:{SMOLLM2.name}:workers={GEMMA3.name}:fallback={GEMMA3.name}",
        ]
        settings = ServerSettings(max_tokens=args.max_tokens)
        with LlamaCppServers(work / "servers", settings=settings) as servers:
            rows, counts = evaluate(task_sets, policies, servers, traces)
    out.mkdir(parents=True, exist_ok=True)
    command = made_by("real_report.py", sys.argv[1:])
    text = markdown(rows, counts, command, started)
    (out / "real-lms.md").write_text(text)
    (out / "real-lms.json").write_text(
        json.dumps(
            {
                "pool": POOL_NAME,
                "rows": [asdict(r) | {"accuracy": r.accuracy} for r in rows],
                "verifier": counts,
            },
            indent=2,
        )
    )
    plot(rows, out / "real-lms.png")
    print(text)


if __name__ == "__main__":
    main()
