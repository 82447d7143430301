"""Importers on the real recorded corpora (../shared/data): ids, samples, gold, our verdicts beside
the source's, and each quirk the folders' READMEs list."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from consortium.records import load_records, write_records
from consortium.records.corpora import import_corpus
from consortium.records.importers.humaneval_runs import read_humaneval_runs
from consortium.records.importers.modelswitch import read_modelswitch
from consortium.records.importers.motcascade import read_motcascade
from consortium.records.importers.rereading import read_rereading
from consortium.records.report import summarise


def test_gsm8k_joins_seven_models_with_one_gold(real: Path, tmp_path: Path) -> None:
    manifest, rows = import_corpus("gsm8k", real, limit=12)
    assert manifest.models == [
        "text-davinci-003",
        "gpt-3.5-turbo",
        "gpt-4o-mini-2024-07-18",
        "gpt-4o",
        "gemini-1.5-pro",
        "gpt-4",
        "Llama-2-13B",
    ]
    assert manifest.questions == 12
    samples = {m: sum(r.model == m for r in rows) for m in manifest.models}
    assert samples["gpt-4"] == 36 and samples["Llama-2-13B"] == 12 * 24
    assert samples["gpt-4o"] == 12
    # GSM8K test index 1309: mot-cascade's gold 2180 is declared, the other repos' 2280 kept
    assert any("question 1309" in n and "'2180'" in n and "'2280'" in n for n in manifest.notes)
    # the same question id means the same gold for every model
    golds = {(r.question_id, r.reference) for r in rows}
    assert len(golds) == 12
    written = write_records(tmp_path / "gsm8k", manifest, rows)
    summaries, disagreements = summarise(load_records(written.folder))
    by_model = {s.model: s for s in summaries}
    # rereading's stored scores are numeric comparisons our math grader reproduces
    assert by_model["gpt-4o-mini-2024-07-18"].agreement == 100.0
    assert by_model["gpt-4o"].compared == 12
    # Llama-2's program-of-thought samples were run in the sandbox and graded
    llama = [r for r in rows if r.model == "Llama-2-13B"]
    assert sum(r.correct is True for r in llama) > 0 and all(r.correct is not None for r in llama)
    for d in disagreements:
        assert d.correct != d.source_correct


def test_rereading_drops_duplicated_ids(real: Path) -> None:
    path = real / "rereading/results/gsm_topp1.0_temp0.0_majority1_20230828_1200.jsonl"
    imported = read_rereading(path, "gpt-3.5-turbo", "cot")
    ids = [o.question_id for o in imported.outputs]
    assert len(ids) == len(set(ids)) == 1319
    assert imported.notes == [f"{path.name}: 30 duplicated ids dropped (first row kept)"]


def test_missing_and_empty_samples_are_kept_as_such(real: Path) -> None:
    cot2 = read_motcascade(real / "mot-cascade/GPT4_result/gsm_cot2.json", "gpt-4")
    assert not [o for o in cot2.outputs if o.question_id == "342"]
    assert any("1 questions with no recorded sample" in n for n in cot2.notes)
    gemini = read_modelswitch(
        real / "modelswitch/Results/MATH/MS/closed_source/gemini-1.5-pro.json"
    )
    empty = [o for o in gemini.outputs if o.response is None]
    assert len(empty) == 1 and empty[0].error == "empty output recorded"
    assert gemini.outputs[0].model == "gemini-1.5-pro"
    llama = read_modelswitch(real / "modelswitch/Results/MATH/MS/open_source/results_70B.json")
    assert {o.model for o in llama.outputs} == {"Llama-3.1-70B-Instruct"}
    assert all(o.source_correct is None for o in llama.outputs)
    assert not any((o.response or "").startswith("assistant\n\n") for o in llama.outputs)


def test_humaneval_runs_keep_counts_and_code(real: Path) -> None:
    imported = read_humaneval_runs(real / "humaneval-runs/gpt-4")
    assert len(imported.outputs) == 1640
    first = imported.outputs[0]
    assert first.question_id == "HumanEval/0" and first.sample == 0
    assert first.tokens_in == 150 and first.tokens_out == 161 and first.latency_s == 13.94
    assert first.task["entry_point"] == "has_close_elements"
    assert sum(bool(o.source_correct) for o in imported.outputs) == 1391  # the README's 84.82 %
    nested = [o for o in imported.outputs if (o.response or "").startswith("```python")]
    assert len(nested) == 9 and not any(o.source_correct for o in nested)


def test_humaneval_verdicts_run_the_tests_in_the_sandbox(real: Path) -> None:
    manifest, rows = import_corpus("humaneval", real, limit=2)
    assert manifest.models == ["gpt-4", "gpt-3.5-turbo", "codellama-34b-instruct"]
    assert len(rows) == 2 * 3 * 10
    # the gpt runs record their token counts; the codellama files record none
    assert {r.model for r in rows if r.tokens_estimated} == {"codellama-34b-instruct"}
    assert all(r.cost_estimated and r.cost_usd > 0 for r in rows)
    agree = sum(r.correct == r.source_correct for r in rows)
    assert agree >= 55, [
        (r.question_id, r.model, r.sample) for r in rows if r.correct != r.source_correct
    ]


def test_routerbench_keeps_recorded_costs_and_empty_verdicts(real: Path) -> None:
    manifest, rows = import_corpus("rb_arc_challenge", real, limit=30)
    assert len(manifest.models) == 11 and not manifest.prices
    assert all(not r.cost_estimated for r in rows)
    gpt4 = [r for r in rows if r.model == "gpt-4-1106-preview"]
    assert len(gpt4) == 30
    # our letter grader against the reconstructed reference agrees with RouterBench's verdicts
    both = [r for r in rows if r.correct is not None and r.source_correct is not None]
    assert sum(r.correct == r.source_correct for r in both) / len(both) > 0.95


def test_a_file_of_a_known_layout_imports_by_arguments(real: Path, tmp_path: Path) -> None:
    source = real / "rereading/results/gsm_topp1.0_temp0.0_majority1_20230828_141934.jsonl"
    lines = source.read_text().splitlines()[:6]
    mine = tmp_path / "my-run.jsonl"
    mine.write_text("\n".join(lines) + "\n")
    out = tmp_path / "mine"
    result = subprocess.run(
        [sys.executable, "-m", "consortium", "records", "import-file", str(mine),
         "--layout", "rereading", "--model", "my-model", "--method", "vanilla",
         "--dataset", "my-gsm", "--kind", "number", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = load_records(out)
    assert records.manifest.dataset == "my-gsm" and records.manifest.models == ["my-model"]
    assert records.table.num_rows == 6
    stored = [json.loads(line)["vanilla"]["score"] for line in lines]
    assert sorted(records.table.column("source_correct").to_pylist()) == sorted(map(bool, stored))


def test_a_records_folder_is_a_task_set_graded_like_the_import(real: Path, tmp_path: Path) -> None:
    from consortium.core.errors import TaskSpecError
    from consortium.records import split_of
    from consortium.tasks.registry import load_task_set

    manifest, rows = import_corpus("humaneval", real, limit=3)
    write_records(tmp_path / "humaneval", manifest, rows)
    task_set = load_task_set(f"records:path={tmp_path / 'humaneval'}")
    assert [t.id for t in task_set.tasks] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert all(t.split == split_of("humaneval", t.id) for t in task_set.tasks)
    by_id = {t.id: t for t in task_set.tasks}
    for row in rows[::7]:
        if row.response is not None:
            grade = task_set.grader.grade(by_id[row.question_id], row.response)
            assert grade.correct == row.correct
    train = load_task_set(f"records:path={tmp_path / 'humaneval'}:split=train")
    assert {t.split for t in train.tasks} <= {"train"}
    with pytest.raises(TaskSpecError, match="records folder not found"):
        load_task_set(f"records:path={tmp_path / 'nowhere'}")
