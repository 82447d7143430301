"""`make real`'s text (`reports.real_lms.markdown`) rebuilt from the committed JSON is the committed
text, byte for byte, and the JSON rebuilt from its rows is the committed JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

from consortium.reports.real_lms.markdown import real_lms_json, real_lms_markdown
from consortium.reports.real_lms.request import Row

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def test_real_lms_text_and_json_are_rebuilt_from_the_committed_json() -> None:
    saved = json.loads((REPORTS / "real-lms.json").read_text())
    committed = (REPORTS / "real-lms.md").read_text()
    header = re.search(r"Made by `([^`]*)`\.", committed)
    assert header is not None
    rows = [Row(**{k: v for k, v in row.items() if k != "accuracy"}) for row in saved["rows"]]
    text = real_lms_markdown(rows, saved["verifier"], header.group(1))
    assert text == committed
    assert real_lms_json(rows, saved["verifier"]) == saved
