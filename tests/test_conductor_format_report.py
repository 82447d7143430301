"""The conductor-format reports' text (`reports.conductor_format.markdown`) rebuilt from their
committed JSON is the committed text, byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from consortium.reports.conductor_format.markdown import markdown
from consortium.reports.conductor_format.run import LOCAL_LABELS

REPORTS = Path(__file__).resolve().parent.parent / "reports"


@pytest.mark.parametrize("name", ["conductor-records-gsm8k", "conductor-smollm2"])
def test_conductor_format_text_is_rebuilt_from_its_json(name: str) -> None:
    summary = json.loads((REPORTS / f"{name}.json").read_text())
    if name == "conductor-smollm2":
        # Made before the JSON held the mode's labels: the run adds them as here.
        summary |= LOCAL_LABELS
    committed = (REPORTS / f"{name}.md").read_text()
    command = re.search(r"Made by `([^`]*)`", committed)
    assert command is not None
    assert markdown(summary, summary["warm_start_loss"], command.group(1)) == committed
