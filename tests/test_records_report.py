"""`consortium records import --report`: the import table (Markdown, JSON) and the listed
disagreements, from a real corpus; and the MBPP name binding the RouterBench grading declares."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consortium.records import load_records
from consortium.records.grading import bind_tested_name

ROOT = Path(__file__).resolve().parents[1]


def test_import_command_writes_folders_and_the_table(tmp_path: Path) -> None:
    real = Path(os.environ.get("CONSORTIUM_REAL_OUTPUTS", ROOT.parent / "shared/data"))
    if not (real / "routerdc/routerbench_zs").is_dir():
        pytest.fail(f"real recorded outputs not found at {real}; set CONSORTIUM_REAL_OUTPUTS")
    report = tmp_path / "reports/records-import.md"
    result = subprocess.run(
        [sys.executable, "-m", "consortium", "records", "import", "--data", str(real),
         "--only", "rb_winogrande,date", "--limit", "20", "--out", str(tmp_path / "records"),
         "--report", str(report)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and "14 data set × model rows" in result.stdout
    assert load_records(tmp_path / "records/date").manifest.questions == 20
    table = report.read_text()
    assert "| rb_winogrande | gpt-4-1106-preview | 20 | 20 |" in table
    assert "| date | gpt-3.5-turbo | 20 | 400 |" in table
    assert "--only rb_winogrande,date --limit 20" in table
    summary = json.loads(report.with_suffix(".json").read_text())
    models = {(m["dataset"], m["model"]): m for m in summary["models"]}
    gpt35 = models[("date", "gpt-3.5-turbo")]
    rows = list(csv.DictReader(report.with_name("records-import-disagreements.csv").open()))
    listed = [r for r in rows if r["dataset"] == "date" and r["model"] == "gpt-3.5-turbo"]
    assert len(listed) == gpt35["disagreements"] > 0  # every disagreement listed, one per row
    assert all(r["correct"] != r["source_correct"] for r in rows)
    assert gpt35["agreement"] == round(
        100 * (gpt35["compared"] - len(listed)) / gpt35["compared"], 2
    )


def test_unknown_corpus_is_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "consortium", "records", "import", "--only", "nope"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1 and result.stderr.startswith("error: --only: unknown corpus")


def test_the_tested_name_is_bound_only_when_missing() -> None:
    code = "def helper(x):\n    return x\n\ndef is_odd(n):\n    return n % 2 == 1"
    bound = bind_tested_name(code, ["assert check_odd(3) == True"])
    assert bound.endswith("check_odd = is_odd\n")
    namespace: dict[str, object] = {}
    exec(bound, namespace)
    assert namespace["check_odd"](3) is True  # type: ignore[operator]
    assert bind_tested_name(code, ["assert is_odd(3)"]) == code
    assert bind_tested_name("x = 1", ["assert f(1) == 2"]) == "x = 1"


def test_code_llama_tags_and_bound_names_are_graded_by_the_mbpp_tests() -> None:
    from consortium.records.grading import CodeVerdicts

    meta = {
        "format": "mbpp",
        "test_list": [
            "assert check_type((5, 6, 7)) == True",
            'assert check_type((1, "4")) == False',
        ],
        "test_setup_code": "",
        "bind_name": True,
    }
    right = "[PYTHON]\ndef same_type(t):\n    return len(set(map(type, t))) <= 1\n[/PYTHON]\n"
    wrong = "[PYTHON]\ndef same_type(t):\n    return True\n[/PYTHON]\n[TESTS]\n[/TESTS]"
    assert CodeVerdicts().grade(meta, right).correct is True
    assert CodeVerdicts().grade(meta, wrong).correct is False
