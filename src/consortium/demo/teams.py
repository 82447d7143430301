"""The served teams, evaluated as a user's endpoints would run them: for each records folder, the
committed policy folders (the best single model, the weighted vote, the team `--kind auto`
picked on train) run by `run_evaluation` against the HTTP replay server of the same records,
question by question, and each live figure set beside the one its folder states."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from consortium.coord.answers.folder import AnswerPolicy, read_policy
from consortium.core.errors import ConfigError
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.evaluation.recorded.selection import Interval, paired_bootstrap
from consortium.evaluation.results import TaskResult
from consortium.records.store import load_records
from consortium.replay.launch import ReplayServerProcess

ROLES = ("single", "vote", "team")
"""The policy folders a data set's demo evaluates: `policies/<dataset>-<role>`."""

DECLARED = (
    "Pool: HTTP replay of recorded outputs of real models (`consortium replay serve --records`): "
    "each call gets the model's recorded text, sample k for seed k; a policy reads it as it would "
    "a live endpoint's. Every folder was fitted on the records' train split "
    "(`consortium train coordinator`); figures are on the test split. `as stated`: the folder's "
    "own test figures, measured in process on the records when it was trained."
)

COLUMNS = (
    "policy",
    "kind",
    "acc %",
    "Δ vs best single [95% CI]",
    "Δ vs weighted vote [95% CI]",
    "$ / question",
    "$ vs best",
    "calls",
    "as stated",
)


@dataclass(frozen=True)
class TeamRow:
    role: str
    """One of ROLES."""
    policy: AnswerPolicy
    accuracy: float
    vs_best_single: Interval
    vs_vote: Interval
    usd_per_question: float
    cost_vs_best_single: float
    calls_per_question: float

    @property
    def as_stated(self) -> bool:
        """The live run reproduces the folder's test accuracy and calls."""
        stated = self.policy.test
        return (
            abs(self.accuracy - stated.accuracy) < 1e-3
            and abs(self.calls_per_question - stated.calls_per_question) < 1e-9
        )


@dataclass(frozen=True)
class TeamSection:
    dataset: str
    test_questions: int
    rows: list[TeamRow]


def team_folders(policies: Path, dataset: str) -> list[Path]:
    folders = [policies / f"{dataset}-{role}" for role in ROLES]
    missing = [str(f) for f in folders if not (f / "policy.json").is_file()]
    if missing:
        raise ConfigError(
            f"no policy folder {', '.join(missing)}: `make teams` fits them on the records"
        )
    return folders


def team_section(
    records: Path, policies: Path, traces: str, *, concurrency: int = 16
) -> TeamSection:
    """One data set: its folders evaluated over the HTTP replay of its records."""
    dataset = load_records(records).manifest.dataset
    folders = team_folders(policies, dataset)
    per_policy = evaluate_folders(records, folders, traces, concurrency=concurrency)
    best = _correct(per_policy[0])
    vote = _correct(per_policy[ROLES.index("vote")])
    best_cost = float(np.mean([r.cost for r in per_policy[0]])) or 1.0
    rows = []
    for role, folder, results in zip(ROLES, folders, per_policy, strict=True):
        correct = _correct(results)
        cost = float(np.mean([r.cost for r in results]))
        rows.append(
            TeamRow(
                role,
                read_policy(folder),
                100 * float(correct.mean()),
                paired_bootstrap(correct, best),
                paired_bootstrap(correct, vote),
                cost,
                cost / best_cost,
                float(np.mean([r.calls for r in results])),
            )
        )
    return TeamSection(dataset, len(best), rows)


def evaluate_folders(
    records: Path, folders: Sequence[Path], traces: str, *, concurrency: int = 16
) -> list[list[TaskResult]]:
    """Each policy folder run on the test split of `records`, question by question, over an HTTP
    replay server of the same records: one list of results per folder, in the split's order."""
    with (
        tempfile.TemporaryDirectory(prefix="consortium-demo-") as scratch,
        ReplayServerProcess(None, "--write-pool", f"{scratch}/pool.toml", records=[records]),
    ):
        result = run_evaluation(
            EvalConfig(
                Path(scratch) / "pool.toml",
                f"records:path={records}:split=test",
                tuple(str(f) for f in folders),
                baselines=False,
                concurrency=concurrency,
                traces=traces,
                kind="demo",
            )
        )
    return list(result.per_policy.values())


def _correct(results: Sequence[TaskResult]) -> np.ndarray:
    return np.array([r.grade.correct for r in results], dtype=bool)


def label(row: TeamRow) -> str:
    if row.role == "single":
        return f"best single model: {row.policy.models[0]}"
    if row.role == "vote":
        return "weighted vote"
    return "the team (auto)"


def cells(row: TeamRow) -> tuple[str, ...]:
    return (
        label(row),
        row.policy.kind,
        f"{row.accuracy:.2f}",
        row.vs_best_single.text(),
        row.vs_vote.text(),
        f"{row.usd_per_question:.5f}",
        f"{100 * row.cost_vs_best_single:.1f} %",
        f"{row.calls_per_question:.2f}",
        "yes" if row.as_stated else f"no ({row.policy.test.accuracy:.2f})",
    )


def section_markdown(section: TeamSection) -> str:
    lines = [
        f"## {section.dataset}: the served team ({section.test_questions} test questions)",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in section.rows]
    selection = section.rows[-1].policy.selection
    lines += ["", f"The team's selection (train split only): {selection}", ""]
    return "\n".join(lines)


def section_table(section: TeamSection) -> Table:
    table = Table(
        title=f"{section.dataset}: the served team ({section.test_questions} test questions; "
        "HTTP replay of recorded outputs)"
    )
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("policy", "kind") else "right")
    for row in section.rows:
        policy, *rest = cells(row)
        table.add_row(escape(policy), *rest)
    return table


def run_team_demo(
    records: Sequence[Path],
    policies: Path,
    *,
    traces: str,
    out: Path | None,
    console: Console | None = None,
) -> list[TeamSection]:
    console = console or Console()
    for folder in records:  # every folder's policies first: a missing one stops before minutes
        team_folders(policies, load_records(folder).manifest.dataset)
    sections = []
    for folder in records:
        console.print(f"{folder}: evaluating its policy folders over the HTTP replay")
        section = team_section(folder, policies, traces)
        console.print(section_table(section))
        sections.append(section)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        text = "# Consortium demo: the served team\n\nMade by `make demo` (`consortium demo`).\n\n"
        text += DECLARED + "\n\n" + "\n".join(section_markdown(s) for s in sections)
        out.write_text(text, encoding="utf-8")
        console.print(f"wrote {out}")
    return sections
