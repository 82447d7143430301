"""Evaluation tables: the terminal one stays readable at 100 columns with every figure whole."""

from __future__ import annotations

import io
import random

from rich.console import Console

from consortium.evaluation.results import EvalReport, PolicySummary
from consortium.evaluation.tables import percent, to_markdown, to_rich

DATASETS = ["mmlu", "gsm8k", "cmmlu", "arc_challenge", "humaneval", "math_prealgebra", "mbpp"]
POLICIES = [
    "workflow:moa(MetaMath-Mistral-7B, zephyr-7b-beta, dolphin-2.6-mixtral-8x7b)",
    "/very/long/path/to/a/trained/policies/trinity-replay-with-a-long-name",
    *(f"single:model-number-{n}-with-a-long-name" for n in range(10)),
    "random",
    "oracle (per-question best)",
]


def demo_like_report() -> EvalReport:
    rng = random.Random(0)
    summaries = [
        PolicySummary(
            name,
            {d: rng.random() for d in DATASETS},
            tasks=400,
            calls=rng.randint(400, 4000),
            tokens=rng.randint(10_000, 900_000),
            cost=rng.random() * 3,
            errors=rng.randint(0, 5),
        )
        for name in POLICIES
    ]
    return EvalReport(
        pool="replay of recorded outcomes (a long description of the files it read)",
        tasks="test splits",
        datasets=DATASETS,
        summaries=summaries,
        groups={"ID": DATASETS[:5], "OOD": DATASETS[5:], "all": DATASETS},
        recorded={s.policy: s.accuracy for s in summaries[:3]},
    )


def test_terminal_tables_fit_100_columns_with_every_figure_whole() -> None:
    report = demo_like_report()
    out = io.StringIO()
    # As the CLI's consoles print: no line breaking of their own.
    Console(file=out, width=100, color_system=None, soft_wrap=True).print(
        to_rich(report, title="demo")
    )
    text = out.getvalue()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "…" not in text  # nothing cut short
    for number, summary in enumerate(report.summaries, 1):
        id_mean = percent(summary.mean(report.groups["ID"]))
        assert any(f" {number} " in line and id_mean in line for line in lines), summary.policy
    for dataset in DATASETS:
        rows = [line for line in lines if f" {dataset} " in line]  # one per table, in order
        assert len(rows) == 2  # 14 policies need two tables at 100 columns
        shown = [cell for row in rows for cell in row.replace("│", " ").split() if cell != dataset]
        assert shown == [percent(s.accuracy[dataset]) for s in report.summaries]
    # Long policy names fold onto more lines of their own cell; no character is lost.
    policy_cells = "".join(line.split("│")[2] for line in lines if line.count("│") > 9)
    assert all("".join(name.split()) in "".join(policy_cells.split()) for name in POLICIES)


def test_markdown_keeps_the_one_wide_table() -> None:
    report = demo_like_report()
    header = next(line for line in to_markdown(report).splitlines() if line.startswith("| policy"))
    assert all(dataset in header for dataset in DATASETS) and "recorded mean" in header
