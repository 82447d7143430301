from __future__ import annotations

import csv
import json
import math
import sys
from collections import Counter
from pathlib import Path

import pytest

from consortium.core.errors import ConfigError
from consortium.replay.behaviour import replay_answer
from consortium.replay.data import ReplayData, load_replay
from consortium.replay.tasks import ReplayGrader, load_replay_tasks, task_from_record

README_COUNTS = {  # n per file, from the data folder's README
    ("mmlu", "test"): 4213,
    ("mmlu", "train"): 2000,
    ("cmmlu", "test"): 3475,
    ("cmmlu", "train"): 2000,
    ("gsm8k", "test"): 1319,
    ("gsm8k", "train"): 1000,
    ("arc_challenge", "test"): 352,
    ("arc_challenge", "train"): 820,
    ("humaneval", "test"): 49,
    ("humaneval", "train"): 115,
    ("math_prealgebra", "test"): 871,
    ("mbpp", "test"): 500,
    ("ceval", "test"): 1346,
    ("rb_arc_challenge", "test"): 445,
    ("rb_mbpp", "test"): 128,
    ("rb_winogrande", "test"): 380,
}


def test_every_file_is_loaded_and_only_duplicates_are_dropped(replay_data: ReplayData) -> None:
    loaded = Counter((r.dataset, r.split) for r in replay_data.records)
    dropped = 0
    for key, n in README_COUNTS.items():
        assert n - 20 <= loaded[key] <= n, key  # README: MMLU repeats 16 test questions in train
        dropped += n - loaded[key]
    assert replay_data.duplicates_dropped >= dropped
    keys = [(r.source, r.question.strip()) for r in replay_data.records]
    assert len(keys) == len(set(keys))
    assert len(replay_data.models["split2"]) == 7
    assert len(replay_data.models["routerbench"]) == 11


def test_probabilities_follow_the_scoring_rule(replay_dir: Path, replay_data: ReplayData) -> None:
    raw_gsm8k = json.loads((replay_dir / "split2_model7/gsm8k-test.json").read_text())
    raw_mmlu = json.loads((replay_dir / "split2_model7/mmlu_test.json").read_text())
    gsm8k = {r.question: r for r in replay_data.select(datasets=["gsm8k"], split="test")}
    mmlu = {r.question: r for r in replay_data.select(datasets=["mmlu"], split="test")}
    for row in raw_gsm8k[:200]:
        assert gsm8k[row["question"]].p_correct == row["scores"]  # sampled: the fraction itself
    for row in raw_mmlu[:200]:
        if row["question"] in mmlu:
            expected = {m: float(s > 0) for m, s in row["scores"].items()}
            assert mmlu[row["question"]].p_correct == expected  # choice: right iff score > 0


def test_routerbench_replays_the_recorded_text(replay_dir: Path, replay_data: ReplayData) -> None:
    csv.field_size_limit(sys.maxsize)
    with (replay_dir / "routerbench_zs/winograde_test.csv").open(newline="") as handle:
        first = next(csv.DictReader(handle))
    record = replay_data.select(datasets=["rb_winogrande"], split="test")[0]
    answer = replay_answer(record, "gpt-4-1106-preview")
    assert answer.text == "B"  # the cell holds the Python literal "['B']"
    assert first["gpt-4-1106-preview|model_response"] == "['B']"
    assert answer.correct == (first["gpt-4-1106-preview"] == "1.0")
    task = task_from_record(record)
    assert ReplayGrader().grade(task, answer.text).correct == answer.correct


def test_sampled_answers_are_right_with_the_recorded_probability(replay_data: ReplayData) -> None:
    record = next(
        r
        for r in replay_data.select(datasets=["gsm8k"], split="test")
        if 0.25 <= min(r.p_correct.values()) < 0.5
    )
    model, p = min(record.p_correct.items(), key=lambda kv: kv[1])
    draws = [replay_answer(record, model, sample=s).correct for s in range(4000)]
    rate = sum(draws) / len(draws)
    assert abs(rate - p) < 4 * math.sqrt(p * (1 - p) / len(draws))
    again = [replay_answer(record, model, sample=s).correct for s in range(4000)]
    assert draws == again  # seeded: reproducible
    other_seed = [replay_answer(record, model, sample=s, seed=1).correct for s in range(4000)]
    assert other_seed != draws


def test_shared_coupling_orders_models_by_probability(replay_data: ReplayData) -> None:
    inversions = {"shared": 0, "independent": 0}
    for record in replay_data.select(datasets=["gsm8k"], split="test")[:300]:
        inside = sorted((p, m) for m, p in record.p_correct.items() if 0 < p < 1)
        if len(inside) < 2 or inside[0][0] == inside[-1][0]:
            continue
        weak, strong = inside[0][1], inside[-1][1]
        for coupling in inversions:
            w = replay_answer(record, weak, coupling=coupling)  # type: ignore[arg-type]
            s = replay_answer(record, strong, coupling=coupling)  # type: ignore[arg-type]
            inversions[coupling] += w.correct and not s.correct
    assert inversions["shared"] == 0
    assert inversions["independent"] > 0


def test_wrong_and_right_answers_grade_as_drawn(replay_data: ReplayData) -> None:
    grader = ReplayGrader()
    for record in replay_data.select(datasets=["humaneval"], split="test"):
        task = task_from_record(record)
        for model in record.p_correct:
            answer = replay_answer(record, model, sample=3)
            assert grader.grade(task, answer.text).correct == answer.correct
    assert not grader.grade(task, "I do not know").correct


def test_task_sets_keep_the_recorded_splits(replay_data: ReplayData) -> None:
    train = load_replay_tasks(replay_data, datasets=["mmlu"], split="train")
    test = load_replay_tasks(replay_data, datasets=["mmlu"], split="test")
    assert {t.question for t in train.tasks}.isdisjoint({t.question for t in test.tasks})
    sample = load_replay_tasks(replay_data, datasets=["mmlu", "gsm8k"], limit=50, seed=3)
    assert Counter(t.dataset for t in sample.tasks) == {"mmlu": 50, "gsm8k": 50}
    assert (
        sample.tasks
        == load_replay_tasks(replay_data, datasets=["mmlu", "gsm8k"], limit=50, seed=3).tasks
    )
    assert "replay of recorded outcomes" in sample.description
    assert "mmlu_test.json" in sample.description


def test_bad_data_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="replay data folder not found"):
        load_replay(tmp_path / "missing")
    with pytest.raises(ConfigError, match="no recorded outcomes found"):
        load_replay(tmp_path)
    (tmp_path / "split2_model7").mkdir()
    (tmp_path / "split2_model7/gsm8k-test.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_replay(tmp_path)
