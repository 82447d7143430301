"""`make train`: the committed policy trained with `consortium train router` and scored through a
replay server with `consortium eval --protocol routerdc`, beside TRINITY variants and baselines
fitted in process on the same questions, with paired bootstrap intervals."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from consortium.coord.trinity.encoder import CachedEncoder
from consortium.coord.trinity.policy import default_encoder, load_policy
from consortium.demo.trinity_eval.markdown import trinity_eval_markdown
from consortium.demo.trinity_eval.request import TrinityReport, TrinityReportRequest
from consortium.demo.trinity_eval.variants import Variants, features, load_tasks
from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData, load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.protocol import ProtocolRow, anchor_rows, protocol_json, with_cis
from consortium.replay.tasks import ID_DATASETS, OOD_DATASETS
from consortium.train.trinity.settings import RecordedConfig, RouterTraining

ID = ",".join(ID_DATASETS)
ALL = ",".join([*ID_DATASETS, *OOD_DATASETS])


@dataclass(frozen=True)
class _Served:
    train_commands: list[str]
    train_seconds: float
    row: dict[str, Any]


def run_trinity_eval(request: TrinityReportRequest) -> TrinityReport:
    """Train and serve the committed policy, then put the variants and anchors beside it."""
    policy = Path(request.policy)
    data = load_replay(request.data, sources=["split2"])
    models = data.models["split2"]
    train, test = load_tasks(data, request.test_limit, request.seed)
    cache = default_encoder(request.encoder, policy / "features.db")
    print(f"features ({request.encoder}, cached in {policy / 'features.db'}):")
    variants = Variants(
        train, test, models, features(cache, train, "train"), features(cache, test, "test")
    )
    test_spec = f"replay:data={request.data}:split=test:datasets={ALL}" + (
        f":limit={request.test_limit}:seed={request.seed}" if request.test_limit else ""
    )
    served = _train_and_serve(request, data, models, test_spec)
    name = f"trinity:{policy.name}"
    rows = [
        _committed_row(variants, policy, cache, name, served.row),
        *_variant_rows(variants, request),
    ]
    anchors = anchor_rows(test, models)
    rows = with_cis(rows, anchors[0], anchors[1]) + anchors
    report = {
        "protocol": "routerdc",
        "pool": data.description("split2"),
        "encoder": request.encoder,
        "tasks": test_spec,
        **_headline(rows, name),
        "commands": served.train_commands,
        "script": request.script,
        **protocol_json(rows),
    }
    datasets = list(dict.fromkeys(t.dataset for t in test))
    text = trinity_eval_markdown(report, rows, datasets)
    print(text)
    return TrinityReport("trinity-eval", text, report)


def _train_and_serve(
    request: TrinityReportRequest, data: ReplayData, models: list[str], test_spec: str
) -> _Served:
    out, policy, cli = Path(request.out), Path(request.policy), list(request.cli)
    with ReplayServerProcess(request.data, "--sources", "split2") as server:
        pool = out / "replay-pool.toml"
        pool.write_text(dump_pool(replay_pool(data, server.base_url, models)))
        train_command = [
            *cli,
            *("train", "router", "--pool", str(pool), "--out", str(policy)),
            *("--encoder", request.encoder, "--rollouts", str(request.rollouts)),
            *("--seed", str(request.seed)),
            *("--tasks", f"replay:data={request.data}:split=train:datasets={ID}"),
        ]
        started = time.perf_counter()
        _run(train_command)
        train_seconds = time.perf_counter() - started
        eval_command = [
            *cli,
            *("eval", "--protocol", "routerdc", "--no-baselines", "--pool", str(pool)),
            *("--policy", str(policy), "--tasks", test_spec),
            *("--json", str(out / "trinity-served.json")),
            *("--traces", f"sqlite:///{out / 'trinity-traces.db'}"),
        ]
        _run(eval_command)
    served = json.loads((out / "trinity-served.json").read_text())
    return _Served(
        [_shown(train_command, cli), _shown(eval_command, cli)],
        train_seconds,
        next(r for r in served["rows"] if not r["anchor"]),
    )


def _committed_row(
    variants: Variants, policy: Path, cache: CachedEncoder, name: str, served_row: dict[str, Any]
) -> ProtocolRow:
    """The committed head applied in process, checked against its served score."""
    coordinator = load_policy(policy, cache)
    logits = (
        coordinator.encoder.encode([t.question for t in variants.test]) @ coordinator.head.weights.T
    )
    kept = json.loads((policy / "policy.json").read_text()).get("validation", {}).get("kept")
    recipe = "imitation, sep-CMA-ES " + (
        "rejected by validation" if kept == "warm start" else "kept by validation"
    )
    committed = variants.row(
        f"{name}: constant, {recipe} [{coordinator.head.n_params:,} weights]",
        logits[:, : len(variants.models)].argmax(axis=1),
    )
    if abs((committed.id_mean or 0) - (served_row["id_mean"] or 0)) > 1e-6:
        raise SystemExit(
            f"served, the policy scored {served_row['id_mean']}; its head applied in process "
            f"{committed.id_mean}: the two paths disagree"
        )
    return replace(committed, sampled=served_row["sampled"])


def _variant_rows(variants: Variants, request: TrinityReportRequest) -> list[ProtocolRow]:
    config = RecordedConfig("es", rollouts=request.rollouts, seed=request.seed)
    from_zeros = RouterTraining(replace(config, sigma0=0.5), warm_start="none")
    return [
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
        *variants.baselines(request.seed),
    ]


def _headline(rows: Sequence[ProtocolRow], coordinator: str) -> dict[str, Any]:
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


def _run(command: list[str]) -> None:
    print("$", shlex.join(command), flush=True)
    subprocess.run(command, check=True)


def _shown(command: list[str], cli: list[str]) -> str:
    return shlex.join(["consortium", *command[len(cli) :]])
