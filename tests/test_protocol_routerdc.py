"""RouterDC's evaluation protocol: the anchors on the recorded test sets, the paired bootstrap,
and `consortium eval --protocol routerdc` through a real replay server."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consortium.evaluation.results import stored_results
from consortium.pool.config import dump_pool, load_pool
from consortium.replay.data import ReplayData, _load_split2
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.protocol import (
    ORACLE,
    anchor_rows,
    paired_bootstrap_ci,
    protocol_json,
    routerdc_rows,
    row_from_choices,
    row_from_values,
    score_matrix,
    with_cis,
)
from consortium.replay.tasks import ID_DATASETS, OOD_DATASETS, load_replay_tasks
from consortium.runtime.store import TraceStore
from consortium.tasks.base import Task
from tests.test_cli import cli, one_line_error

DATASETS = [*ID_DATASETS, *OOD_DATASETS]
ROUTERDC_TABLE = {  # the RouterDC test files as published, every question kept
    "best single (dolphin-2.9-llama3-8b)": [
        59.46, 69.81, 44.72, 49.43, 49.39, 54.56, 39.72, 47.34, 44.80, 43.95
    ],
    "per-dataset best": [64.59, 69.81, 51.77, 57.95, 49.39, 58.70, 39.72, 47.34, 52.01, 46.36],
    ORACLE: [85.26, 83.32, 79.63, 72.44, 66.94, 77.52, 67.05, 62.40, 81.58, 70.34],
}  # fmt: skip
# `load_replay` keeps one record per question text, so the replay task sets drop 8 repeated MMLU
# questions, 1 MBPP and 1 C-Eval; only those columns (and the means) move.
REPLAY_TASKSET_TABLE = {
    "best single (dolphin-2.9-llama3-8b)": [
        59.43, 69.81, 44.72, 49.43, 49.39, 54.56, 39.72, 47.43, 44.76, 43.97
    ],
    "per-dataset best": [64.54, 69.81, 51.77, 57.95, 49.39, 58.69, 39.72, 47.43, 51.97, 46.38],
    ORACLE: [85.23, 83.32, 79.63, 72.44, 66.94, 77.51, 67.05, 62.53, 81.56, 70.38],
}  # fmt: skip
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
CHINESE = "itpossible/Chinese-Mistral-7B-v0.1"  # the weakest on MMLU


@pytest.fixture(scope="module")
def full_files(replay_dir: Path) -> tuple[list[Task], list[str]]:
    """The split2 test files exactly as recorded: the loader's duplicate-dropping bypassed."""
    records, files = _load_split2(replay_dir / "split2_model7")
    data = ReplayData(records, files)
    return load_replay_tasks(data, datasets=DATASETS).tasks, data.models["split2"]


@pytest.fixture(scope="module")
def replay_tasks(replay_data: ReplayData) -> list[Task]:
    return load_replay_tasks(replay_data, datasets=DATASETS).tasks


def table(tasks: list[Task], models: list[str]) -> dict[str, list[float]]:
    return {
        row.name: [
            round(value, 2)
            for value in [
                *(row.per_dataset[d] for d in ID_DATASETS),
                row.id_mean,
                *(row.per_dataset[d] for d in OOD_DATASETS),
                row.ood_mean,
            ]
            if value is not None
        ]
        for row in anchor_rows(tasks, models)
    }


def test_anchors_reproduce_the_routerdc_table(full_files: tuple[list[Task], list[str]]) -> None:
    tasks, models = full_files
    assert len(tasks) == 4213 + 1319 + 3475 + 352 + 49 + 871 + 500 + 1346
    assert table(tasks, models) == ROUTERDC_TABLE


def test_anchors_on_the_replay_task_set(replay_tasks: list[Task], replay_data: ReplayData) -> None:
    assert table(replay_tasks, replay_data.models["split2"]) == REPLAY_TASKSET_TABLE


def test_intervals_pair_the_tasks(replay_tasks: list[Task], replay_data: ReplayData) -> None:
    models = replay_data.models["split2"]
    best, per_dataset, _ = anchor_rows(replay_tasks, models)
    same = replace(per_dataset, name="copy", anchor=False)
    # Per-dataset best everywhere but MMLU, where the weakest MMLU model answers instead.
    mmlu = np.array([t.dataset == "mmlu" for t in replay_tasks])
    chinese = score_matrix(replay_tasks, [CHINESE])[:, 0]
    worse = row_from_values(
        "worse on mmlu", replay_tasks, np.where(mmlu, chinese, per_dataset.values)
    )
    same, worse = with_cis([same, worse], best, per_dataset)
    assert same.ci_vs_per_dataset_best == (0.0, 0.0) and same.delta_vs_per_dataset_best == 0.0
    assert worse.ci_vs_per_dataset_best is not None and worse.delta_vs_per_dataset_best is not None
    low, high = worse.ci_vs_per_dataset_best
    assert low < worse.delta_vs_per_dataset_best < high < 0

    args = (worse.values, per_dataset.values, worse.task_datasets, ID_DATASETS, 400)
    assert paired_bootstrap_ci(*args, seed=7) == paired_bootstrap_ci(*args, seed=7)
    assert paired_bootstrap_ci(*args, seed=7) != paired_bootstrap_ci(*args, seed=8)
    assert paired_bootstrap_ci(worse.values, per_dataset.values, worse.task_datasets, ["x"]) is None


def test_a_dominated_choice_is_below_zero_in_every_resample() -> None:
    tasks = [Task(f"t{i}", "q", "mmlu" if i < 6 else "gsm8k", "test") for i in range(10)]
    # Column 1 is worse than column 0 on every MMLU task and equal on GSM8K: no resample can
    # bring the difference of ID means to 0.
    scores = np.array([[1.0, 0.5]] * 6 + [[0.3, 0.3], [0.5, 0.5], [0.9, 0.9], [0.2, 0.2]])
    best = row_from_choices("best", tasks, scores, [0] * 10)
    lower = row_from_choices("lower", tasks, scores, [1] * 6 + [0] * 4)
    assert best.per_dataset == {"mmlu": 100.0, "gsm8k": pytest.approx(47.5)}
    assert best.id_mean is not None and lower.id_mean == pytest.approx(best.id_mean - 25)
    interval = paired_bootstrap_ci(lower.values, best.values, lower.task_datasets)
    assert interval is not None and np.allclose(interval, -25.0)


@pytest.fixture
def pool_file(replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path) -> Path:
    path = tmp_path / "pool.toml"
    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"])
    path.write_text(dump_pool(config))
    return path


def test_eval_protocol_routerdc(
    pool_file: Path, tmp_path: Path, replay_dir: Path, replay_data: ReplayData
) -> None:
    spec = f"replay:data={replay_dir}:datasets=mmlu,gsm8k,mbpp:limit=12"
    singles = {
        "single:Meta-Llama-3-8B": LLAMA3,
        "single:MetaMath-Mistral-7B": "meta-math/MetaMath-Mistral-7B",
    }
    policies = [option for name in [*singles, "random"] for option in ("--policy", name)]
    traces = f"sqlite:///{tmp_path}/t.db"
    common = ["--tasks", spec, *policies, "--protocol", "routerdc", "--traces", traces]
    ran = cli("eval", "--pool", str(pool_file), *common, "--json", str(tmp_path / "r.json"),
              "--markdown", str(tmp_path / "r.md"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "Δ vs per-dataset best [95% CI]" in ran.stdout
    report: dict[str, Any] = json.loads((tmp_path / "r.json").read_text())
    assert report["protocol"] == "routerdc"
    rows = {row["name"]: row for row in report["rows"]}
    assert [row["name"] for row in report["rows"]][:3] == [*singles, "random"]
    assert sum(name == ORACLE for name in rows) == 1

    # The same seeded sample as the spec's, from the data already loaded.
    tasks = load_replay_tasks(replay_data, datasets=["mmlu", "gsm8k", "mbpp"], limit=12).tasks
    for name, recorded in singles.items():
        for dataset in ("mmlu", "gsm8k", "mbpp"):
            scores = [t.meta["p_correct"][recorded] for t in tasks if t.dataset == dataset]
            assert rows[name]["per_dataset"][dataset] == pytest.approx(100 * np.mean(scores))
        assert rows[name]["sampled"].keys() == {"mmlu", "gsm8k", "mbpp"}
        assert len(rows[name]["ci_vs_best_single"]) == 2
    assert rows[ORACLE]["ci_vs_best_single"] is None and rows[ORACLE]["sampled"] is None
    markdown = (tmp_path / "r.md").read_text()
    assert "RouterDC (published) (cited, not measured" in markdown and "| random" in markdown

    # A resumed run reads the results back from the trace store, with the model that answered.
    store = TraceStore(traces)
    stored = stored_results(store, report["run_id"], tasks)
    store.close()
    recorded_ids = {m.name: m.model for m in load_pool(pool_file).models}
    rows_again = protocol_json(routerdc_rows(stored, tasks, recorded_ids))["rows"]
    assert json.loads(json.dumps(rows_again)) == report["rows"]


def test_protocol_routerdc_needs_replay_tasks(pool_file: Path, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "What is 1+1?", "answer": "#### 2"}\n')
    result = cli(
        "eval", "--pool", str(pool_file), "--tasks", f"gsm8k:path={questions}",
        "--protocol", "routerdc", "--traces", f"sqlite:///{tmp_path}/t.db",
    )  # fmt: skip
    one_line_error(result, "needs a replay task set")
