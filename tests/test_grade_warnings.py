"""Grades that disagree with the source's are loud: the import table marks the model, the records
commands print a warning, and `coordinate` and the records task set (what `train` reads) say so
first."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from consortium.records import load_records, write_records
from consortium.records.agreement import grade_warnings
from consortium.records.build import Part, build_dataset
from consortium.records.importers.base import SourceImport, SourceOutput
from consortium.records.schema import SourceFile
from consortium.records.tasks import records_task_set
from consortium.tasks.spec import parse_spec
from tests.test_cli import cli

MODELS = ("m1", "m2", "m3")


def _outputs(questions: int = 40) -> list[SourceOutput]:
    """Five options a question; the gold is E on every other question; m1 is always right,
    m2 right on a third, m3 always answers A. The source's verdicts are the true ones."""
    outputs = []
    for q in range(questions):
        question = f"Question {q}?\n" + "\n".join(f"{c}. option {c}{q}" for c in "ABCDE")
        gold = "E" if q % 2 == 0 else "B"
        chosen = {"m1": gold, "m2": gold if q % 3 == 0 else "C", "m3": "A"}
        for model in MODELS:
            response = f"The answer is ({chosen[model]})."
            outputs.append(
                SourceOutput(
                    str(q), question, gold, model, 0, response, source_correct=chosen[model] == gold
                )
            )
    return outputs


def _folder(tmp_path: Path, name: str, letters: str | None) -> Path:
    task = {"letters": letters} if letters else {}
    outputs = [SourceOutput(**{**_as_dict(o), "task": task}) for o in _outputs()]
    files = [SourceFile(path="fixture.jsonl", model=m) for m in MODELS]
    manifest, rows = build_dataset(
        name,
        "choice",
        [Part(SourceImport(outputs, files), "fixture", "0", tmp_path)],
        licence="test",
        created_by="test",
        workers=1,
    )
    return write_records(tmp_path / name, manifest, rows).folder


def _as_dict(output: SourceOutput) -> dict[str, object]:
    return {name: getattr(output, name) for name in SourceOutput.__slots__}


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    # "ABCD" declared by hand: every E is read as no answer, as the old default did
    return _folder(tmp_path, "misread", "ABCD"), _folder(tmp_path, "read", None)


def test_a_grader_that_reads_no_answer_where_the_source_is_right_is_named(
    folders: tuple[Path, Path],
) -> None:
    misread, read = folders
    warnings = grade_warnings(load_records(misread))
    assert [w.model for w in warnings] == ["m1", "m2"]  # m3 always says A: both agree
    m1 = warnings[0]
    assert m1.agreement == pytest.approx(50.0) and m1.source == pytest.approx(100.0)
    assert m1.ours == pytest.approx(50.0)
    assert m1.commonest == "ours read no answer in 20 rows the source marks right"
    assert "misread / m1" in m1.line() and "agree on 50.0% of 40 rows" in m1.line()
    assert grade_warnings(load_records(read)) == []


def test_records_report_marks_the_row_and_prints_the_warning(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    misread, read = folders
    report = tmp_path / "import.md"
    done = _consortium("records", "report", str(misread), str(read), "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert "warning: misread / m1" in done.stderr and "warning: read /" not in done.stderr
    table = report.read_text()
    marked = [line for line in table.splitlines() if line.startswith("| misread | m1 |")]
    assert marked and "⚠" in marked[0]
    assert not any("⚠" in line for line in table.splitlines() if line.startswith("| read |"))
    shown = _consortium("records", "show", str(misread))
    assert "warning: misread / m2" in shown.stderr


def test_coordinate_and_the_training_task_set_say_so_first(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    misread, _ = folders
    out = tmp_path / "coordination"
    done = _consortium(
        "coordinate", "--records", str(misread), "--out", str(out), "--generations", "1",
        "--popsize", "4", "--minibatch", "8", "--cache", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.lstrip().startswith("warning: misread / m1")
    summary = json.loads(out.with_suffix(".json").read_text())["datasets"][0]
    assert len(summary["grade_warnings"]) == 2
    assert "**warning: misread / m1" in out.with_suffix(".md").read_text()
    task_set = records_task_set(parse_spec(f"records:path={misread}:split=train"))
    assert len(task_set.warnings) == 2
    assert "disagree with the source's for m1, m2" in task_set.description


def _consortium(*args: str) -> subprocess.CompletedProcess[str]:
    return cli(*args, env={"COLUMNS": "400"}, timeout=600)


def test_the_warnings_hint_runs_as_printed(folders: tuple[Path, Path], tmp_path: Path) -> None:
    """The command a warning names lists the disagreeing rows where it says, run as printed from
    where the warning was printed."""
    misread, _ = folders
    shown = _consortium("records", "show", str(misread))
    line = next(text for text in shown.stderr.splitlines() if text.startswith("warning:"))
    hint = re.search(r"`(consortium [^`]+)` lists them in (\S+)$", line)
    assert hint, line
    command, listed = hint.groups()
    words = shlex.split(command)
    ran = subprocess.run(
        [sys.executable, "-m", "consortium", *words[1:]],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    rows = (tmp_path / listed).read_text().splitlines()
    assert len(rows) > 1 and all(",m1," in r or ",m2," in r for r in rows[1:])
    assert not Path(words[words.index("--report") + 1]).is_relative_to("reports")
