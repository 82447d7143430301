"""The records format: a written folder reads back equal (and through pandas); the split is a
fixed rule; bad folders get one clear line (library and CLI), and nothing else is touched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from consortium.records import (
    SCHEMA_VERSION,
    Manifest,
    OutputRow,
    RecordsError,
    load_records,
    split_of,
    write_records,
)
from consortium.records.split import split_rule
from tests.helpers import run_consortium


def manifest(models: list[str]) -> Manifest:
    return Manifest(
        schema_version=SCHEMA_VERSION,
        dataset="toy",
        answer_kind="number",
        sources=[],
        licence="test data written by this test",
        grader="consortium.tasks.math",
        split=split_rule(),
        models=models,
        questions=3,
        created_by="tests/test_records_format.py",
    )


def rows() -> list[OutputRow]:
    made = []
    for question in ("10", "2", "1"):
        for model in ("b", "a"):
            for sample in (1, 0):
                made.append(
                    OutputRow(
                        question_id=question,
                        question=f"What is {question} + 1?",
                        reference=str(int(question) + 1),
                        model=model,
                        sample=sample,
                        response=None if sample else f"The answer is {int(question) + 1}",
                        answer=None if sample else str(int(question) + 1),
                        correct=None if sample else True,
                        source_correct=True,
                        tokens_in=5,
                        tokens_out=0 if sample else 4,
                        tokens_estimated=True,
                        cost_usd=0.001,
                        cost_estimated=True,
                        latency_s=None if sample else 1.5,
                        error="no generation recorded" if sample else None,
                    )
                )
    return made


def test_written_folder_reads_back_equal_and_sorted(tmp_path: Path) -> None:
    written = write_records(tmp_path / "toy", manifest(["a", "b"]), rows())
    loaded = load_records(tmp_path / "toy")
    assert loaded.manifest == written.manifest
    assert sorted(loaded.rows(), key=repr) == sorted(rows(), key=repr)
    keys = [(r.question_id, r.model, r.sample) for r in loaded.rows()]
    assert keys[:4] == [("1", "a", 0), ("1", "a", 1), ("1", "b", 0), ("1", "b", 1)]
    assert keys[-1] == ("10", "b", 1)  # "10" after "2": ids sort as numbers
    frame = loaded.table.to_pandas()
    assert list(frame.columns)[:5] == ["question_id", "question", "reference", "model", "sample"]
    assert frame["sample"].dtype.name == "int32"
    # the same rows always give the same bytes
    write_records(tmp_path / "again", manifest(["a", "b"]), list(reversed(rows())))
    assert (tmp_path / "again/outputs.parquet").read_bytes() == (
        tmp_path / "toy/outputs.parquet"
    ).read_bytes()


def test_split_is_a_fixed_rule_on_the_id() -> None:
    splits = [split_of("gsm8k", str(i)) for i in range(2000)]
    assert splits == [split_of("gsm8k", str(i)) for i in range(2000)]
    assert 0.45 < splits.count("test") / 2000 < 0.55
    # the data set is part of the rule: another data set splits the same ids differently
    assert splits != [split_of("math", str(i)) for i in range(2000)]
    # sha256("gsm8k/0")[:8] = 1950c909 -> 0.099 < 0.5: test; "gsm8k/1" -> acc646b0 -> 0.675: train
    assert split_of("gsm8k", "0") == "test" and split_of("gsm8k", "1") == "train"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_consortium(*args)


def refused(folder: Path, expected: str) -> None:
    with pytest.raises(RecordsError, match=expected) as caught:
        load_records(folder)
    assert "\n" not in str(caught.value)
    result = cli("records", "show", str(folder))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("error:") and expected in result.stderr


def test_corrupt_parquet_is_one_line_and_nothing_else_changes(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    write_records(folder, manifest(["a", "b"]), rows())
    data = (folder / "outputs.parquet").read_bytes()
    (folder / "outputs.parquet").write_bytes(data[: len(data) // 2])
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    refused(folder, "not a readable Parquet file")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_unknown_schema_version_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    write_records(folder, manifest(["a", "b"]), rows())
    text = json.loads((folder / "manifest.json").read_text())
    text["schema_version"] = SCHEMA_VERSION + 1
    (folder / "manifest.json").write_text(json.dumps(text))
    refused(folder, f"schema_version {SCHEMA_VERSION + 1} is not understood")


def test_missing_files_are_one_line(tmp_path: Path) -> None:
    refused(tmp_path / "nowhere", "records folder not found")
    folder = tmp_path / "toy"
    write_records(folder, manifest(["a", "b"]), rows())
    (folder / "outputs.parquet").unlink()
    refused(folder, "no outputs.parquet")
    (folder / "manifest.json").unlink()
    refused(folder, "no manifest.json")


def test_a_table_that_does_not_fit_the_manifest_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    write_records(folder, manifest(["a", "b"]), rows())
    table = pq.read_table(folder / "outputs.parquet").drop_columns(["cost_usd"])
    pq.write_table(table, folder / "outputs.parquet")
    refused(folder, "missing: cost_usd")
    with pytest.raises(RecordsError, match="models the manifest does not list: b"):
        write_records(tmp_path / "other", manifest(["a"]), rows())
