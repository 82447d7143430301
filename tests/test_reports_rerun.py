"""The cheap report targets, run by their own Makefile commands in a temporary folder, write their
committed reports byte for byte: a second `make TARGET` leaves `git status` clean. `make demo` has
its own such test (tests/test_demo.py); the long targets are listed with their minutes in
reports/README.md."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import SharedRecords
from tests.test_demo import make_steps

ROOT = Path(__file__).resolve().parents[1]

CHEAP = {"routing-demo": ("routing-demo.md",)}
"""Target -> the reports it writes (a few minutes each on 2 cores). conductor-reachable joins when
its GSM8K verdicts hold under load (reports/README.md says what a rerun changed)."""

RECORDS = ("gsm8k", "math", "humaneval", "date")
"""The records folders a target may read (the demo's sets)."""


@pytest.mark.e2e
@pytest.mark.parametrize("target", sorted(CHEAP))
def test_a_cheap_target_rewrites_its_committed_reports_byte_for_byte(
    target: str, replay_dir: Path, shared_records: SharedRecords, tmp_path: Path
) -> None:
    """The target's commands (`make -n`) in a folder holding the committed policies, the scripts
    and the records folders (the checkout's where `make records` made them, else the session's
    imports, read through links), then each report compared with the committed one."""
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    (tmp_path / "scripts").symlink_to(ROOT / "scripts")
    (tmp_path / "records").mkdir()
    for name in RECORDS:
        made = ROOT / "records" / name
        folder = made if (made / "manifest.json").is_file() else shared_records(name, None)
        (tmp_path / "records" / name).symlink_to(folder.resolve())
    variables = [f"VENV={sys.prefix}", f"REPLAY_DATA={replay_dir.resolve()}", "DEMO_ARGS="]
    steps = make_steps(target, variables, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSORTIUM_")}
    env["CONSORTIUM_CACHE"] = os.environ["CONSORTIUM_CACHE"]  # the session's model cache
    env |= {"COLUMNS": "200", "PYTHONPATH": str(ROOT / "src")}
    for step in steps:
        ran = subprocess.run(
            ["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
    stale = [
        name
        for name in CHEAP[target]
        if (tmp_path / "reports" / name).read_bytes() != (ROOT / "reports" / name).read_bytes()
    ]
    assert not stale, f"stale: {stale}; rerun `make {target}` and read the diff before committing"
