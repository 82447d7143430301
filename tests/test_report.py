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


def test_calls_tokens_and_dollars_are_per_task_in_both_tables_with_the_run_total_below() -> None:
    summaries = [
        PolicySummary("single:a", {"gsm8k": 0.5}, 4, calls=4, tokens=400, cost=0.02, errors=0),
        PolicySummary("team", {"gsm8k": 0.75}, 4, calls=10, tokens=1000, cost=0.1, errors=1),
    ]
    report = EvalReport("pool", "tasks", ["gsm8k"], summaries)
    markdown = to_markdown(report).splitlines()
    header = next(line for line in markdown if line.startswith("| policy"))
    assert header.endswith("| calls/task | tokens/task | $/task | errors |")
    assert "| team | 75.0 | 2.50 | 250 | 0.025000 | 1 |" in markdown
    assert "Run total, every policy: 14 calls, 1,400 tokens, $0.1200." in markdown
    out = io.StringIO()
    Console(file=out, width=100, color_system=None, soft_wrap=True).print(to_rich(report))
    text = out.getvalue()
    rows = [line.replace("│", " ").split() for line in text.splitlines()]
    assert ["2", "team", "2.50", "250", "0.025000", "1"] in rows
    assert "Run total, every policy: 14 calls, 1,400 tokens, $0.1200." in " ".join(text.split())
