"""The TRINITY reports' text (`demo.trinity_eval.markdown`) rebuilt from their committed JSON is
the committed text, byte for byte: `make train` and `make compare` write what they wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from consortium.demo.trinity_eval.markdown import optimizers_markdown, trinity_eval_markdown
from consortium.replay.protocol import ProtocolRow

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def rows_of(saved: list[dict[str, Any]]) -> list[ProtocolRow]:
    """A JSON's protocol rows, without the per-task arrays (the text does not show them)."""
    intervals = {"ci_vs_best_single", "ci_vs_per_dataset_best"}
    return [
        ProtocolRow(
            **{k: tuple(v) if k in intervals and v is not None else v for k, v in row.items()},
            values=np.empty(0),
            task_datasets=(),
        )
        for row in saved
    ]


def test_trinity_eval_text_is_rebuilt_from_its_json() -> None:
    report = json.loads((REPORTS / "trinity-eval.json").read_text())
    rows = rows_of(report["rows"])
    text = trinity_eval_markdown(report, rows, list(rows[0].per_dataset))
    assert text == (REPORTS / "trinity-eval.md").read_text()


def test_optimizers_text_is_rebuilt_from_its_json() -> None:
    report = json.loads((REPORTS / "optimizers.json").read_text())
    committed = (REPORTS / "optimizers.md").read_text()
    script = re.search(r"Made by `([^`]*)`", committed)
    rollouts = re.search(r"\| ([\d,]+) \|", committed)
    assert script is not None and rollouts is not None
    rows = rows_of(report["encoders"]["rows"])
    text = optimizers_markdown(
        report,
        script.group(1),
        int(rollouts.group(1).replace(",", "")),
        3,
        rows,
        list(rows[0].per_dataset),
    )
    assert text == committed
