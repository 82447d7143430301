"""A real cluster on one machine: a Ray head and two worker nodes started with `ray start` (each
its own process, `--num-cpus` and temporary folder, on loopback) and a PostgreSQL server as the
trace store. `eval`, `train trinity` and `evolve` run through it with `--executor ray
--ray-address …` and give the local run's result; a worker node's raylet killed mid-run loses
nothing and duplicates nothing. `make test-cluster` runs this file (`-m cluster`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete, func, select, update

import consortium
from consortium.pool.config import dump_pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.pgserver import PostgresServer
from consortium.runtime.raycluster import DRIVER_ENV, LocalRayCluster
from consortium.runtime.store import TraceStore
from consortium.runtime.store_tables import results, runs
from tests.conftest import ROOT
from tests.helpers import untimed

pytestmark = pytest.mark.cluster

SRC = Path(consortium.__file__).resolve().parents[1]
NODE_ENV = {
    "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    # a lost node is noticed within about 3 s, not Ray's default 15-30 s
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
    **DRIVER_ENV,
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    with LocalRayCluster(head_cpus=0, worker_cpus=(1, 1), env=NODE_ENV) as started:
        yield started
    assert not started.pids(), "every process a node started has ended"


@pytest.fixture(scope="module")
def postgres(postgres_server: PostgresServer) -> PostgresServer:
    return postgres_server


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "consortium", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **NODE_ENV, "HF_HUB_OFFLINE": "1"},
    )


def pool_file(data: ReplayData, server: ReplayServerProcess, folder: Path, count: int) -> Path:
    path = folder / "pool.toml"
    path.write_text(dump_pool(replay_pool(data, server.base_url, data.models["split2"][:count])))
    return path


def result_rows(url: str, run_id: str) -> list[tuple[str, str]]:
    store = TraceStore(url)
    try:
        return [(r["policy"], r["task_id"]) for r in store.iter_results(run_id)]
    finally:
        store.close()


def only_run(url: str, kind: str) -> str:
    store = TraceStore(url)
    try:
        (run,) = [r["run_id"] for r in store.list_runs() if r["kind"] == kind]
        return str(run)
    finally:
        store.close()


def test_cluster_nodes_are_separate_processes(cluster: LocalRayCluster) -> None:
    raylets = [node.raylet_pid() for node in cluster.nodes]
    assert all(raylets) and len(set(raylets)) == 3
    assert [node.num_cpus for node in cluster.nodes] == [0, 1, 1]


def test_eval_on_cluster_and_postgres_equals_local(
    cluster: LocalRayCluster,
    postgres: PostgresServer,
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    replay_dir: Path,
    tmp_path: Path,
) -> None:
    pool = pool_file(replay_data, replay_server, tmp_path, 2)
    tasks = f"replay:data={replay_dir}:datasets=mmlu,gsm8k:limit=6"
    url = postgres.create_database("eval_equal")
    reports = {}
    for executor, traces in (("local", f"sqlite:///{tmp_path / 't.db'}"), ("ray", url)):
        out = tmp_path / f"{executor}.json"
        done = cli(
            "eval", "--pool", str(pool), "--tasks", tasks, "--json", str(out),
            "--traces", traces, "--executor", executor, "--ray-address", cluster.address,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        reports[executor] = json.loads(out.read_text())
    assert untimed(reports["ray"]["policies"]) == untimed(reports["local"]["policies"])
    rows = result_rows(url, reports["ray"]["run_id"])
    assert len(rows) == len(set(rows)) == 12 * 3  # two models and random, 12 tasks each


def test_train_trinity_on_cluster_equals_local(
    cluster: LocalRayCluster,
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    replay_dir: Path,
    tmp_path: Path,
) -> None:
    pool = pool_file(replay_data, replay_server, tmp_path, 3)
    tasks = f"replay:data={replay_dir}:datasets=mmlu,gsm8k:split=train:limit=8"
    heads = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        done = cli(
            "train", "trinity", "--pool", str(pool), "--tasks", tasks, "--out", str(out),
            "--generations", "2", "--popsize", "4", "--minibatch", "6", "--components", "4",
            "--executor", executor, "--ray-address", cluster.address,
            "--traces", f"sqlite:///{tmp_path / executor}.db",  # not the checkout's store
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        heads[executor] = (out / "head.npy").read_bytes(), (out / "curve.csv").read_text()
    assert heads["ray"] == heads["local"]


def test_evolve_on_cluster_and_postgres_equals_local(
    cluster: LocalRayCluster,
    postgres: PostgresServer,
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    replay_dir: Path,
    tmp_path: Path,
) -> None:
    pool = pool_file(replay_data, replay_server, tmp_path, 3)
    data = f"replay:data={replay_dir}:datasets=mmlu,gsm8k"
    url = postgres.create_database("evolve_equal")
    outcomes = {}
    for executor, traces in (("local", f"sqlite:///{tmp_path / 't.db'}"), ("ray", url)):
        out = tmp_path / executor
        done = cli(
            "evolve", "--pool", str(pool), "--out", str(out), "--rounds", "1",
            "--tasks", f"{data}:split=train:limit=10", "--heldout", f"{data}:split=test:limit=10",
            "--batch", "12", "--heldout-batch", "16", "--proposers", "cluster-specialists",
            "--traces", traces, "--executor", executor, "--ray-address", cluster.address,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        state = json.loads((out / "state.json").read_text())
        rounds = [{k: v for k, v in r.items() if k != "run_id"} for r in state["rounds"]]
        final = {k: v for k, v in state["final"].items() if k != "run_id"}
        outcomes[executor] = json.dumps(untimed([rounds, final]), sort_keys=True)
    assert outcomes["ray"] == outcomes["local"]
    store = TraceStore(url)
    assert {r["kind"] for r in store.list_runs()} >= {"evolve"} and store.list_runs()[0]["calls"]
    store.close()


def test_raylet_killed_mid_eval_loses_and_repeats_nothing(
    cluster: LocalRayCluster,
    postgres: PostgresServer,
    replay_data: ReplayData,
    replay_dir: Path,
    tmp_path: Path,
) -> None:
    """SIGKILL worker node 0's raylet once the run has stored some results: Ray runs the lost
    job again on node 1, which skips the tasks already stored; every (policy, task) is stored
    once and the report is the uninterrupted local run's. Then the same run, half its results
    deleted, is resumed on the cluster (`--resume`): again each once, the same report."""
    with ReplayServerProcess(replay_dir, "--latency-base", "0.15") as slow:
        pool = pool_file(replay_data, slow, tmp_path, 2)
        tasks = f"replay:data={replay_dir}:datasets=mmlu,gsm8k:limit=12"
        common = ["--pool", str(pool), "--tasks", tasks, "--concurrency", "1", "--no-baselines"]
        common += [f"--policy=single:{name}" for name in replay_pool(
            replay_data, slow.base_url, replay_data.models["split2"][:2]
        ).names]  # fmt: skip
        expected_rows = 24 * 2
        local_json = tmp_path / "local.json"
        local = cli("eval", *common, "--json", str(local_json), "--traces",
                    f"sqlite:///{tmp_path / 't.db'}")  # fmt: skip
        assert local.returncode == 0, local.stderr[-3000:]
        expected = untimed(json.loads(local_json.read_text())["policies"])

        url = postgres.create_database("node_loss")
        out = tmp_path / "ray.json"
        command = [
            sys.executable,
            "-m",
            "consortium",
            "eval",
            *common,
            "--json",
            str(out),
            "--traces",
            url,
            "--executor",
            "ray",
            "--ray-address",
            cluster.address,
        ]
        log = (tmp_path / "ray.log").open("w")
        run = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, **NODE_ENV})  # fmt: skip
        try:
            store = TraceStore(url)
            deadline = time.monotonic() + 180
            stored = 0
            while time.monotonic() < deadline and run.poll() is None:
                with store.engine.connect() as db:
                    stored = db.execute(select(func.count()).select_from(results)).scalar_one()
                if stored >= 4 and "_apply" in cluster.workers[0].running_jobs():
                    break  # node 0 is in the middle of a job
                time.sleep(0.2)
            assert 4 <= stored < expected_rows, f"{stored} results before the kill"
            assert "_apply" in cluster.workers[0].running_jobs()
            cluster.kill_raylet(0)
            run.wait(timeout=240)
        finally:
            if run.poll() is None:
                run.kill()
            log.close()
        output = (tmp_path / "ray.log").read_text()
        assert run.returncode == 0, output[-3000:]
        report = json.loads(out.read_text())
        assert untimed(report["policies"]) == expected
        rows = result_rows(url, report["run_id"])
        assert len(rows) == len(set(rows)) == expected_rows

        # an interrupted run (half its results gone), continued on the surviving node
        run_id = report["run_id"]
        with store.engine.begin() as db:
            ids = db.execute(select(results.c.id).order_by(results.c.id)).scalars().all()
            db.execute(delete(results).where(results.c.id.in_(ids[::2])))
            db.execute(update(runs).where(runs.c.run_id == run_id).values(status="failed"))
        resumed_json = tmp_path / "resumed.json"
        resumed = cli(
            "eval", *common, "--json", str(resumed_json), "--traces", url, "--executor", "ray",
            "--ray-address", cluster.address, "--resume", run_id,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert untimed(json.loads(resumed_json.read_text())["policies"]) == expected
        rows = result_rows(url, run_id)
        assert len(rows) == len(set(rows)) == expected_rows
        assert only_run(url, "eval") == run_id
        store.close()


def _crash(_item: int) -> int:
    os._exit(1)  # the worker process dies under the job, every time


def test_a_job_lost_past_its_retries_stops_with_one_clear_line(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    script = (
        "import asyncio\n"
        "from consortium.runtime.dist import RayExecutor, Work\n"
        "from tests.test_cluster import _crash\n"
        f"executor = RayExecutor({cluster.address!r})\n"
        "async def nothing(items): return []\n"
        "asyncio.run(executor.run(Work(nothing, lambda: _crash), [1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **NODE_ENV},  # its PYTHONPATH finds tests.test_cluster
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "ClusterError: the Ray cluster lost a job after 3 retries" in done.stderr
    assert "--resume" in done.stderr
