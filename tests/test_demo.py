"""The demos: `make demo` (the served teams over the HTTP replay of records) reproduces its
committed report and the figures its policy folders state; `make routing-demo`'s figures agree
with the recorded data, read here straight from the files."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from rich.console import Console

from consortium.coord.answers.folder import write_policy
from consortium.core.errors import ConfigError
from consortium.demo.routing import demo_workflows, run_routing_demo
from consortium.demo.teams import run_team_demo
from consortium.evaluation.results import ORACLE
from consortium.records import write_records
from consortium.replay.data import load_replay
from consortium.runtime.store import TraceStore
from consortium.train.answers.best_kind import fit_best_kind
from consortium.train.answers.policy import fit_answer_policy
from tests.helpers import SharedRecords
from tests.toy_records import toy_manifest, toy_rows

DEMO_RECORDS = ("gsm8k", "math", "humaneval", "date")
"""The records sets `make demo` evaluates (the Makefile's DEMO_RECORDS)."""

ROOT = Path(__file__).resolve().parents[1]

SPLIT2_FILES = {
    ("gsm8k", "test"): ("gsm8k-test.json", "sampled"),
    ("humaneval", "test"): ("humaneval_test.json", "sampled"),
    ("mmlu", "test"): ("mmlu_test.json", "choice"),
    ("cmmlu", "test"): ("cmmlu_test.json", "choice"),
    ("arc_challenge", "test"): ("arc_challenge_test.json", "choice"),
    ("math_prealgebra", "test"): ("MATH_prealgebra.json", "sampled"),
    ("mbpp", "test"): ("mbpp.json", "sampled"),
    ("ceval", "test"): ("ceval.json", "choice"),
}
RB_FILES = {
    "rb_arc_challenge": "arc_challenge_test.csv",
    "rb_mbpp": "mbpp_test.csv",
    "rb_winogrande": "winograde_test.csv",
}


def recorded_probabilities(replay_dir: Path, task_id: str) -> tuple[dict[str, float], str]:
    source, dataset, split, index = task_id.split("/")
    if source == "split2":
        name, kind = SPLIT2_FILES[(dataset, split)]
        row = json.loads((replay_dir / "split2_model7" / name).read_text())[int(index)]
        probabilities = {
            m: (s if kind == "sampled" else float(s > 0)) for m, s in row["scores"].items()
        }
        return probabilities, kind
    csv.field_size_limit(sys.maxsize)
    with (replay_dir / "routerbench_zs" / RB_FILES[dataset]).open(newline="") as handle:
        row = list(csv.DictReader(handle))[int(index)]
    models = [f.split("|")[0] for f in row if f.endswith("|model_response")]
    # An empty (ungraded) cell takes the verdict another model got for the identical response.
    text_verdict = {row[f"{m}|model_response"]: row[m] for m in models if row[m]}
    cells = {m: row[m] or text_verdict.get(row[f"{m}|model_response"], "0.0") for m in models}
    return {m: float(cell == "1.0") for m, cell in cells.items()}, "choice"


def test_routing_demo_matches_the_recorded_data(replay_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "routing-demo.md"
    console = Console(file=io.StringIO(), width=200)
    reports = run_routing_demo(
        replay_dir,
        traces=f"sqlite:///{tmp_path}/t.db",
        out=out,
        limit=20,
        console=console,
    )
    workflows = demo_workflows(load_replay(replay_dir))
    # workflows, singles, random, oracle
    assert [len(r.summaries) for r in reports] == [4 + 7 + 2, 11 + 2]
    # On replay a worker's answer does not depend on what it sees: a workflow scores what the
    # model of its last step scores.
    last_model = {w.name: f"single:{w.workflow.steps[-1].model}" for w in workflows}
    # A vote returns one voter's own text, chosen by the judge: right whenever the judge is right
    # and a voter gave that answer, never right when no voter is (replay draws are independent).
    voters = {
        w.name: [f"single:{step.model}" for step in w.workflow.steps[:-1]]
        for w in workflows
        if w.name.startswith("workflow:judge-vote")
    }
    store = TraceStore(f"sqlite:///{tmp_path}/t.db")
    checked = 0
    for report in reports:
        rows = list(store.iter_results(report.run_id))
        expected: dict[tuple[str, str], list[float]] = defaultdict(list)
        kinds: dict[str, str] = {}
        for task_id in {row["task_id"] for row in rows}:
            probabilities, kind = recorded_probabilities(replay_dir, task_id)
            dataset = task_id.split("/")[1]
            kinds[dataset] = kind
            for model, p in probabilities.items():
                expected[(f"single:{model.rsplit('/', 1)[-1]}", dataset)].append(p)
            expected[(ORACLE, dataset)].append(max(probabilities.values()))
        for summary in report.summaries:
            for dataset, measured in summary.accuracy.items():
                if summary.policy == "random":
                    continue
                if summary.policy in voters:
                    judge = expected[(last_model[summary.policy], dataset)]
                    per_voter = [expected[(v, dataset)] for v in voters[summary.policy]]
                    some_voter = [
                        1 - math.prod(1 - p for p in ps) for ps in zip(*per_voter, strict=True)
                    ]
                    low = [j * v for j, v in zip(judge, some_voter, strict=True)]

                    def slack(ps: list[float]) -> float:
                        return 4 * math.sqrt(sum(p * (1 - p) for p in ps)) / len(ps) + 1e-12

                    assert sum(low) / len(low) - slack(low) <= measured, summary.policy
                    assert measured <= sum(some_voter) / len(low) + slack(some_voter), dataset
                    checked += 1
                    continue
                ps = expected[(last_model.get(summary.policy, summary.policy), dataset)]
                mean = sum(ps) / len(ps)
                if kinds[dataset] == "choice":
                    assert measured == mean, (summary.policy, dataset)
                else:  # sampled: the replay draws each answer with its recorded probability
                    spread = math.sqrt(sum(p * (1 - p) for p in ps)) / len(ps)
                    assert abs(measured - mean) <= 4 * spread + 1e-12, (summary.policy, dataset)
                checked += 1
    # every workflow, single model and the oracle, everywhere
    assert checked == (4 + 7 + 1) * 8 + (11 + 1) * 3
    # progress: a line as each policy finishes, so the demo is never silent for long
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert shown.count(" tasks in ") == (4 + 7 + 1) + (11 + 1), shown[:2000]
    assert "split2 · single:Mistral-7B-v0.1: 160 tasks in" in shown
    text = out.read_text()
    assert "replay of recorded outcomes" in text and "oracle (per-question best)" in text
    assert "Traces: run" not in text  # no run ids: a rerun leaves the committed file unchanged
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert all(f"consortium traces show {r.run_id}" in output for r in reports)
    assert "MetaMath-Mistral-7B" in output and "gpt-4-1106-preview" in output


def test_the_team_demo_runs_the_folders_over_http_and_says_they_reproduce(tmp_path: Path) -> None:
    """On toy records: the folders `make teams` writes, evaluated over the HTTP replay, give the
    figures the folders state; a missing folder is one line before any server starts."""
    toy = tmp_path / "records" / "toy"
    write_records(toy, toy_manifest("toy"), toy_rows())
    policies = tmp_path / "policies"
    console = Console(file=io.StringIO(), width=200)
    with pytest.raises(ConfigError, match=r"toy-single.*make teams"):
        run_team_demo([toy], policies, traces=f"sqlite:///{tmp_path}/t.db", out=None)
    write_policy(policies / "toy-single", fit_answer_policy("single", toy).policy)
    write_policy(policies / "toy-vote", fit_answer_policy("vote", toy).policy)
    write_policy(policies / "toy-team", fit_best_kind(toy))
    out = tmp_path / "demo.md"
    [section] = run_team_demo(
        [toy], policies, traces=f"sqlite:///{tmp_path}/t.db", out=out, console=console
    )
    assert [row.policy.kind for row in section.rows][:2] == ["single", "vote"]
    assert all(row.as_stated for row in section.rows), [
        (row.accuracy, row.policy.test.accuracy) for row in section.rows
    ]
    single, _vote, team = section.rows
    # toy records: the strong model is always right; the cheap pair agree (and are right) on even
    # questions only
    assert single.policy.models == ["strong"] and single.accuracy == 100.0
    assert team.accuracy == 100.0
    assert team.policy.train.usd_per_question < single.policy.train.usd_per_question
    text = out.read_text()
    assert "| best single model: strong | single | 100.00 | +0.00 [+0.00, +0.00] |" in text
    assert text.count("| yes |") == 3
    assert "The team's selection (train split only): auto:" in text


def demo_table(markdown: str, after: str) -> dict[str, dict[str, str]]:
    """The first markdown table after `after`: its rows by policy, each row's cells by column."""
    lines = markdown[markdown.index(after) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| policy |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    header, _rule, *body = rows
    return {row[0]: dict(zip(header, row, strict=True)) for row in body}


def test_the_trinity_page_quotes_the_committed_routing_demo() -> None:
    report = demo_table((ROOT / "reports/routing-demo.md").read_text(), "## split2 test splits")
    page = ROOT / "docs/trinity.md"
    quoted = demo_table(page.read_text(), "made by `make routing-demo`:")
    assert list(quoted) == list(report)  # every policy, in the report's order
    for policy, cells in quoted.items():
        assert cells == {column: report[policy][column] for column in cells}, policy
    # and the figures its prose quotes from the table
    prose = " ".join(page.read_text().split())
    singles = {name: row for name, row in report.items() if name.startswith("single:")}
    best = max(singles, key=lambda name: float(singles[name]["ID mean"]))
    assert best == "single:dolphin-2.9-llama3-8b"
    id_ood = (report[best]["ID mean"], report[best]["OOD mean"])
    assert "(dolphin-2.9: {} in-distribution, {} out-of-distribution)".format(*id_ood) in prose
    trinity = report["trinity:trinity-replay"]
    assert f"with {trinity['ID mean']} and {trinity['OOD mean']};" in prose
    assert f"the oracle ({report[ORACLE]['ID mean']})" in prose
    vote = next(row for name, row in report.items() if name.startswith("workflow:judge-vote("))
    assert f"The judge's vote's {vote['ID mean']} is" in prose


def make_steps(target: str, variables: list[str], cwd: Path) -> list[str]:
    """What `make TARGET` would run, read from the Makefile with `make -n` (install skipped)."""
    planned = subprocess.run(
        ["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), "-n", "-o", "install",
         target, *variables],
        cwd=cwd,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    return planned.stdout.strip().splitlines()


@pytest.mark.e2e
def test_make_demo_rewrites_the_committed_report_byte_for_byte(
    real: Path, shared_records: SharedRecords, tmp_path: Path
) -> None:
    """`make demo`'s own commands, run in a temporary folder with the committed policy folders,
    write reports/demo.md exactly as committed: a fresh `make demo` leaves `git status` clean.
    The records folders are the checkout's where `make records` made them, else the session's
    imports of the whole corpora (read through links, never written): this checks the demo's
    output, the importer has tests of its own."""
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    (tmp_path / "records").mkdir()
    for name in DEMO_RECORDS:
        made = ROOT / "records" / name
        folder = made if (made / "manifest.json").is_file() else shared_records(name, None)
        (tmp_path / "records" / name).symlink_to(folder.resolve())
    variables = [f"VENV={sys.prefix}", f"REAL_OUTPUTS={real.resolve()}", "DEMO_ARGS="]
    steps = make_steps("demo", variables, tmp_path)
    assert all(f"--records records/{name}" in steps[-1] for name in DEMO_RECORDS), steps
    assert "--out reports/demo.md" in steps[-1], steps
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSORTIUM_")}
    env["CONSORTIUM_CACHE"] = os.environ["CONSORTIUM_CACHE"]  # the session's model cache
    env |= {"COLUMNS": "200"}
    for step in steps:
        ran = subprocess.run(
            ["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
    written = (tmp_path / "reports/demo.md").read_text()
    committed = (ROOT / "reports/demo.md").read_text()
    assert written == committed, "reports/demo.md is stale: rerun `make demo` and commit it"
    assert written.count("| yes |") == 3 * len(written.split("## ")[1:])  # each as stated


def test_the_readme_quotes_the_committed_demo_report() -> None:
    """Per data set, the README's top table is the demo's: the best single model, the vote and
    the team, each figure as reports/demo.md has it (which the byte-for-byte test keeps fresh)."""
    written = (ROOT / "reports/demo.md").read_text()
    readme = " ".join((ROOT / "README.md").read_text().split())
    sections = written.split("\n## ")[1:]
    assert len(sections) == 4
    for section in sections:
        rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")]
        single, vote, team = rows[1:]  # after the header row
        model = single[0].removeprefix("| best single model: ")
        quoted = (
            f"| {model} {single[2]} | {vote[2]}, {vote[3]} | {team[1]}: {team[2]}, {team[3]} | "
            f"{team[4]} | {team[6]} |"
        )
        assert quoted in readme, (section.split(":")[0], quoted)
