"""`train trinity`, `eval --policy` and `ask --policy`, end to end on the replay server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.store import TraceStore
from tests.helpers import run_consortium


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_consortium(*args)


def test_train_trinity_checkpoints_and_resumes(
    replay_server: ReplayServerProcess, replay_data: ReplayData, replay_dir: Path, tmp_path: Path
) -> None:
    pool = tmp_path / "pool.toml"
    pool.write_text(
        dump_pool(replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"]))
    )
    policy = tmp_path / "policy"
    spec = f"replay:data={replay_dir}:limit=12:datasets=mmlu,gsm8k,cmmlu"
    traces = f"sqlite:///{tmp_path / 'traces.db'}"

    def train(generations: int, *extra: str) -> subprocess.CompletedProcess[str]:
        return cli(
            "train",
            "trinity",
            "--pool",
            str(pool),
            "--out",
            str(policy),
            "--tasks",
            f"{spec}:split=train",
            "--generations",
            str(generations),
            "--popsize",
            "6",
            "--minibatch",
            "9",
            "--components",
            "8",
            "--traces",
            traces,
            *extra,
        )

    trained = train(3)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "7 model + 3 role outputs × 8-d feature = 80 parameters" in trained.stderr
    assert "1 turn, role worker: a one-shot router" in trained.stderr
    # off a terminal the progress is lines: each generation's rollouts, 10 % at a time
    assert "rollouts of the generation: 54/54 (100 %)" in trained.stderr
    store = TraceStore(traces)
    (run,) = [r for r in store.list_runs() if r["kind"] == "train"]
    assert run["status"] == "finished" and run["calls"] == 3 * 54  # every rollout traced
    policies = {r["policy"] for r in store.iter_results(run["run_id"])}
    assert "generation 3 · candidate 6" in policies
    meta = json.loads((policy / "policy.json").read_text())
    assert meta["generation"] == 3 and meta["n_params"] == 80
    assert (policy / "curve.png").stat().st_size > 1000
    assert len((policy / "curve.csv").read_text().splitlines()) == 4

    resumed = train(4, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed from generation 3" in resumed.stderr
    assert json.loads((policy / "policy.json").read_text())["generation"] == 4

    # `eval` and `ask` with a policy folder: tests/test_readme.py (the README's first session)
    for run in (trained, resumed):  # the encoder loads without transformers' own bars
        assert "Loading weights" not in run.stderr and "it/s]" not in run.stderr
