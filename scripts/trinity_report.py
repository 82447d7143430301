"""Train the TRINITY router on the replay pool and score it by RouterDC's protocol.

    python scripts/trinity_report.py --data ../shared/data/routerdc            # make train
    python scripts/trinity_report.py --data ../shared/data/routerdc --compare  # make compare

`make train`: encodes the questions once (feature cache: POLICY/features.db), trains the committed
policy with `consortium train router` (imitation warm start, then sep-CMA-ES on recorded
rewards), scores it through a replay server with `consortium eval --protocol routerdc` on the full
test sets, and puts beside it, on the same tasks, TRINITY variants (paper-like head without the
constant feature, no warm start, imitation alone, a projected feature), a kNN router, an MLP router,
the training split's best model per dataset, random routing and the anchors (best single,
per-dataset best, oracle) with paired bootstrap intervals. Writes OUT/trinity-eval.{md,json}.

`make compare`: the optimizer table at the paper's head size (SmolLM2-135M-Instruct's 576-d state
plus the constant: 10 x 577 = 5,770 weights): sep-CMA-ES, REINFORCE, random search and imitation at
equal rollout budgets, 3 seeds, both rewards; and the encoder comparison (MiniLM vs SmolLM2). On
seeded samples of the train and test sets (SmolLM2 takes ~0.4 s per question on 2 cores). Writes
OUT/optimizers.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.trinity.encoder import SMOLLM2_NAME
from consortium.coord.trinity.policy import default_encoder, load_policy
from consortium.evaluation.tables import markdown_table
from consortium.pool.config import dump_pool
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.protocol import (
    ProtocolRow,
    anchor_rows,
    protocol_json,
    protocol_markdown,
    with_cis,
)
from consortium.replay.tasks import ID_DATASETS, OOD_DATASETS
from consortium.train.trinity.settings import RecordedConfig, RouterTraining
from made_by import made_by
from trinity_variants import Variants, features, load_tasks

ID = ",".join(ID_DATASETS)
ALL = ",".join([*ID_DATASETS, *OOD_DATASETS])
MINILM = "all-MiniLM-L6-v2"


def run(command: list[str]) -> None:
    print("$", shlex.join(command), flush=True)
    subprocess.run(command, check=True)


def headline(rows: Sequence[ProtocolRow], coordinator: str) -> dict[str, Any]:
    """The JSON keys other tools read: coordinator, best_single, per_dataset_best, oracle."""
    by_kind = {"coordinator": next(r for r in rows if r.name.startswith(coordinator))}
    for row in rows:
        if row.anchor:
            key = (
                "best_single"
                if row.name.startswith("best single")
                else "per_dataset_best"
                if row.name.startswith("per-dataset best")
                else "oracle"
            )
            by_kind[key] = row
    return {
        key: {"name": r.name, "id_mean": r.id_mean, "ood_mean": r.ood_mean}
        for key, r in by_kind.items()
    }


def main_report(args: argparse.Namespace, cli: list[str]) -> None:
    out, policy = Path(args.out), Path(args.policy)
    data = load_replay(args.data, sources=["split2"])
    models = data.models["split2"]
    train, test = load_tasks(data, args.test_limit, args.seed)
    cache = default_encoder(args.encoder, policy / "features.db")
    print(f"features ({args.encoder}, cached in {policy / 'features.db'}):")
    raw_train = features(cache, train, "train")
    raw_test = features(cache, test, "test")
    test_spec = f"replay:data={args.data}:split=test:datasets={ALL}" + (
        f":limit={args.test_limit}:seed={args.seed}" if args.test_limit else ""
    )
    config = RecordedConfig("es", rollouts=args.rollouts, seed=args.seed)
    with ReplayServerProcess(args.data, "--sources", "split2") as server:
        pool = out / "replay-pool.toml"
        pool.write_text(dump_pool(replay_pool(data, server.base_url, models)))
        train_command = [
            *cli,
            *("train", "router", "--pool", str(pool), "--out", str(policy)),
            *("--encoder", args.encoder, "--rollouts", str(args.rollouts)),
            *("--seed", str(args.seed)),
            *("--tasks", f"replay:data={args.data}:split=train:datasets={ID}"),
        ]
        started = time.perf_counter()
        run(train_command)
        train_seconds = time.perf_counter() - started
        eval_command = [
            *cli,
            *("eval", "--protocol", "routerdc", "--no-baselines", "--pool", str(pool)),
            *("--policy", str(policy), "--tasks", test_spec),
            *("--json", str(out / "trinity-served.json")),
            *("--traces", f"sqlite:///{out / 'trinity-traces.db'}"),
        ]
        run(eval_command)
    served = json.loads((out / "trinity-served.json").read_text())
    served_row = next(r for r in served["rows"] if not r["anchor"])

    variants = Variants(train, test, models, raw_train, raw_test)
    name = f"trinity:{policy.name}"
    coordinator = load_policy(policy, cache)
    logits = coordinator.encoder.encode([t.question for t in test]) @ coordinator.head.weights.T
    kept = json.loads((policy / "policy.json").read_text()).get("validation", {}).get("kept")
    recipe = "imitation, sep-CMA-ES " + (
        "rejected by validation" if kept == "warm start" else "kept by validation"
    )
    committed = variants.row(
        f"{name}: constant, {recipe} [{coordinator.head.n_params:,} weights]",
        logits[:, : len(models)].argmax(axis=1),
    )
    if abs((committed.id_mean or 0) - (served_row["id_mean"] or 0)) > 1e-6:
        raise SystemExit(
            f"served, the policy scored {served_row['id_mean']}; its head applied in process "
            f"{committed.id_mean}: the two paths disagree"
        )
    committed = replace(committed, sampled=served_row["sampled"])
    from_zeros = RouterTraining(replace(config, sigma0=0.5), warm_start="none")
    rows = [
        committed,
        variants.trinity(
            "TRINITY as in the paper: no constant, sep-CMA-ES from zeros",
            replace(from_zeros, constant=False),
        ),
        variants.trinity("TRINITY: constant, sep-CMA-ES from zeros", from_zeros),
        variants.trinity(
            "TRINITY: constant, imitation only",
            RouterTraining(replace(config, optimizer="imitation")),
        ),
        variants.trinity(
            "TRINITY: constant, imitation → sep-CMA-ES, no validation guard",
            RouterTraining(config, validation=0),
        ),
        variants.trinity(
            "TRINITY: 32 principal axes + constant, imitation → sep-CMA-ES",
            RouterTraining(config, components=32),
        ),
        *variants.baselines(args.seed),
    ]
    anchors = anchor_rows(test, models)
    rows = with_cis(rows, anchors[0], anchors[1]) + anchors
    datasets = list(dict.fromkeys(t.dataset for t in test))
    report = {
        "protocol": "routerdc",
        "pool": data.description("split2"),
        "encoder": args.encoder,
        "tasks": test_spec,
        **headline(rows, name),
        "train_seconds": round(train_seconds, 1),
        "commands": [_shown(train_command, cli), _shown(eval_command, cli)],
        "script": made_by("trinity_report.py", sys.argv[1:]),
        **protocol_json(rows),
    }
    (out / "trinity-eval.json").write_text(json.dumps(report, indent=2))
    table = protocol_markdown(rows, datasets, report["pool"])
    (out / "trinity-eval.md").write_text(
        f"# TRINITY on the replay pool, RouterDC protocol\n\nMade by `{report['script']}` "
        f"({args.encoder} features). The committed policy was trained and served by:\n\n"
        + "".join(f"    {c}\n" for c in report["commands"])
        + f"\nTraining took {train_seconds:.0f} s on this machine (features cached). Its row comes "
        "from the served run (`eval --protocol routerdc`); the other rows are fitted on the same "
        "training questions and scored on the same test questions in process, from the recorded "
        "outcomes. Rewards in training: the recorded score of the chosen model (the expectation "
        "of the paper's binary reward; a declared variance reduction).\n\n" + table
    )
    print(table)


def compare_report(args: argparse.Namespace) -> None:
    """Optimizers at the paper's head size and the two encoders, on a test sample."""
    out = Path(args.out)
    data = load_replay(args.data, sources=["split2"])
    models = data.models["split2"]
    train, test = load_tasks(data, args.compare_test_limit, args.seed, args.compare_train_limit)
    encoded: dict[str, Variants] = {}
    for encoder in (MINILM, SMOLLM2_NAME):
        cache = default_encoder(encoder, Path(args.policy) / "features.db")
        print(f"features ({encoder}):")
        encoded[encoder] = Variants(
            train, test, models, features(cache, train, "train"), features(cache, test, "test")
        )
    smol = encoded[SMOLLM2_NAME]
    results: dict[str, list[ProtocolRow]] = {}
    budget = RecordedConfig(rollouts=args.rollouts)
    settings = [
        ("sep-CMA-ES", "es", "recorded", 0.5),
        ("sep-CMA-ES", "es", "draw", 0.5),
        ("REINFORCE", "reinforce", "recorded", 0.5),
        ("REINFORCE", "reinforce", "draw", 0.5),
        ("random search", "random", "recorded", 0.5),
        ("imitation (SFT)", "imitation", "recorded", 0.5),
        ("imitation → sep-CMA-ES", "es", "recorded", 0.002),
    ]
    for label, optimizer, reward, sigma in settings:
        key = f"{label}, reward {reward}" if optimizer != "imitation" else label
        for seed in range(args.seeds):
            started = time.perf_counter()
            config = replace(budget, optimizer=optimizer, reward=reward, sigma0=sigma, seed=seed)  # type: ignore[arg-type]
            warm = "imitation" if label.startswith("imitation →") else "none"
            row = smol.trinity(key, RouterTraining(config, warm_start=warm, validation=0))
            results.setdefault(key, []).append(row)
            print(
                f"{key} seed {seed}: ID {row.id_mean:.2f} ({time.perf_counter() - started:.0f} s)"
            )
    header = ["optimizer (10 x 577 = 5,770 weights)", "rollouts", "ID mean ± sd", "OOD mean ± sd"]
    body = [
        [
            key,
            "0 (no rollouts)" if key.startswith("imitation (SFT)") else f"{args.rollouts:,}",
            _mean_sd([r.id_mean or 0 for r in rows]),
            _mean_sd([r.ood_mean or 0 for r in rows]),
        ]
        for key, rows in results.items()
    ]
    encoder_rows = []
    for encoder, variants in encoded.items():
        for components in (None, 32):
            row = variants.trinity(
                f"{encoder}, {'full' if components is None else '32 axes'}",
                RouterTraining(replace(budget, optimizer="es"), components=components),
            )
            encoder_rows.append(row)
        encoder_rows += [
            replace(r, name=f"{encoder}, {r.name}") for r in variants.baselines(args.seed)[:2]
        ]
    anchors = anchor_rows(test, models)
    datasets = list(dict.fromkeys(t.dataset for t in test))
    encoder_rows = with_cis(encoder_rows, anchors[0], anchors[1]) + anchors
    pool = data.description("split2")
    sample = (
        f"{args.compare_test_limit} test questions per dataset (seed {args.seed}); trained on "
        f"{args.compare_train_limit or 'all'} train questions per ID dataset"
    )
    text = "\n".join(
        [
            "# Optimizers and encoders for the TRINITY router, RouterDC protocol",
            "",
            f"Made by `{made_by('trinity_report.py', sys.argv[1:])}`. Pool: {pool}. "
            f"Scored on {sample}. Head: SmolLM2-135M-"
            "Instruct's final hidden state at position −2 (576-d) plus the constant feature, "
            "7 model rows and 3 role rows. Budget: rollouts = questions answered by candidates. "
            f"{args.seeds} seeds; mean ± sd of the test-sample means.",
            "",
            *markdown_table(header, body),
            "",
            "## Encoders (imitation → sep-CMA-ES; kNN and MLP on the same features)",
            "",
            protocol_markdown(encoder_rows, datasets, pool),
        ]
    )
    (out / "optimizers.md").write_text(text)
    (out / "optimizers.json").write_text(
        json.dumps(
            {
                "protocol": "routerdc",
                "pool": pool,
                "sample": sample,
                "optimizers": {
                    key: [{"id_mean": r.id_mean, "ood_mean": r.ood_mean} for r in rows]
                    for key, rows in results.items()
                },
                "encoders": protocol_json(encoder_rows),
            },
            indent=2,
        )
    )
    print(text)


def _shown(command: list[str], cli: list[str]) -> str:
    return shlex.join(["consortium", *command[len(cli) :]])


def _mean_sd(values: list[float]) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values, ddof=1) if len(values) > 1 else 0:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="reports")
    parser.add_argument("--policy", default="policies/trinity-replay")
    parser.add_argument("--encoder", default=MINILM, help="the committed policy's encoder")
    parser.add_argument("--rollouts", type=int, default=2_000_000)
    parser.add_argument("--test-limit", type=int, default=0, help="per dataset (0: full sets)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true", help="optimizers and encoders instead")
    parser.add_argument("--compare-test-limit", type=int, default=150)
    parser.add_argument(
        "--compare-train-limit", type=int, default=400, help="per dataset (0: every question)"
    )
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.compare:
        compare_report(args)
    else:
        main_report(args, [sys.executable, "-m", "consortium"])


if __name__ == "__main__":
    main()
