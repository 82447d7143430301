"""`make demo`'s figures agree with the recorded data, read here straight from the files."""

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

from consortium.coordinate import baselines
from consortium.coordinate.tables import outcome_table
from consortium.evaluation.results import ORACLE
from consortium.records import load_records, write_records
from consortium.replay.data import load_replay
from consortium.replay.demo import demo_workflows, run_demo
from consortium.runtime.store import TraceStore
from tests.toy_records import toy_manifest, toy_rows

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


def test_demo_matches_the_recorded_data(replay_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.md"
    console = Console(file=io.StringIO(), width=200)
    toy = tmp_path / "toy"
    write_records(toy, toy_manifest("toy"), toy_rows())
    reports = run_demo(
        replay_dir,
        traces=f"sqlite:///{tmp_path}/t.db",
        out=out,
        limit=20,
        console=console,
        records=[toy],
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
        if w.name.startswith("workflow:vote")
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
    # the answer-aware team on the records folder comes first, its figures those of the library
    assert text.index("## toy: answer-aware team") < text.index("## split2 test splits")
    table = outcome_table(load_records(toy))
    test = table.indices("test")
    vote = baselines.weighted_vote(table)
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in text.splitlines()}
    best = rows["best single model (train): strong"]
    assert best[1:2] == ["100.00"] and best[4] == "100.0 %"
    vote_share = 100 * vote.cost[test].mean() / 0.01
    assert rows["weighted vote (train accuracy)"][4] == f"{vote_share:.1f} %"
    cascade = next(r for name, r in rows.items() if name.startswith("learned scorer cascade"))
    even = sum(int(table.question_ids[q]) % 2 == 0 for q in test)
    expected = (even * 0.003 + (len(test) - even) * 0.013) / len(test)
    assert cascade[1] == "100.00" and cascade[3] == f"{expected:.5f}"
    assert "toy: answer-aware team on recorded outputs" in output
    assert "learned scorer cascade [all 3 models, cheapest first" in output  # not read as markup


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


def test_the_readme_quotes_the_committed_demo_report() -> None:
    report = demo_table((ROOT / "reports/demo.md").read_text(), "## split2 test splits")
    quoted = demo_table((ROOT / "README.md").read_text(), "made by `make demo`:")
    assert list(quoted) == list(report)  # every policy, in the report's order
    for policy, cells in quoted.items():
        assert cells == {column: report[policy][column] for column in cells}, policy
    # and the figures its prose quotes from the table
    prose = " ".join((ROOT / "README.md").read_text().split())
    singles = {name: row for name, row in report.items() if name.startswith("single:")}
    best = max(singles, key=lambda name: float(singles[name]["ID mean"]))
    assert best == "single:dolphin-2.9-llama3-8b"
    id_ood = (report[best]["ID mean"], report[best]["OOD mean"])
    assert "(dolphin-2.9: {} in-distribution, {} out-of-distribution)".format(*id_ood) in prose
    trinity = report["trinity:trinity-replay"]
    assert f"with {trinity['ID mean']} and {trinity['OOD mean']};" in prose
    assert f"the oracle ({report[ORACLE]['ID mean']})" in prose
    vote = next(row for name, row in report.items() if name.startswith("workflow:vote("))
    assert f"The vote's {vote['ID mean']} is" in prose


@pytest.mark.slow
def test_make_demo_rewrites_the_committed_report_byte_for_byte(
    replay_dir: Path, tmp_path: Path
) -> None:
    """`make demo`'s own command (read from the Makefile with `make -n`), run in a temporary
    folder, writes reports/demo.md exactly as committed: a fresh `make demo` leaves `git status`
    clean. About 2 minutes on 2 cores: the replay of 200 questions per dataset through every
    policy (the TRINITY policy's sentence encoder and the 7-call debate take the most)."""
    # The demo's inputs, as `make demo` finds them in the checkout: the committed policy (copied,
    # so that its feature cache is written here) and the records folders (`make records`; read
    # through links, never written; imported here, a few minutes, where the checkout has none).
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    (tmp_path / "records").mkdir()
    for folder in (ROOT / "records").glob("*/manifest.json"):
        (tmp_path / "records" / folder.parent.name).symlink_to(folder.parent)
    data = replay_dir.resolve()
    variables = [f"VENV={sys.prefix}", f"REPLAY_DATA={data}", f"REAL_OUTPUTS={data.parent}"]
    variables.append("DEMO_ARGS=")
    planned = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-f",
            str(ROOT / "Makefile"),
            "-n",
            "-o",
            "install",
            "demo",
            *variables,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert planned.returncode == 0, planned.stderr
    steps = planned.stdout.strip().splitlines()
    assert " demo --data " in steps[-1] and "--out reports/demo.md" in steps[-1], steps
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONSORTIUM_")}
    # the encoder's exported model is a cache of the checkout's own (see ALLOWED_WRITES)
    env |= {"CONSORTIUM_CACHE": str(ROOT / ".consortium"), "COLUMNS": "200"}
    for step in steps:
        ran = subprocess.run(
            ["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
    written = (tmp_path / "reports/demo.md").read_bytes()
    committed = (ROOT / "reports/demo.md").read_bytes()
    assert written == committed, "reports/demo.md is stale: rerun `make demo` and commit it"
    # the terminal shows the tables in the file's order: the answer-aware team first
    shown = ran.stdout
    assert shown.index("gsm8k: answer-aware team") < shown.index("split2 test splits of")
    assert shown.index("split2 test splits of") < shown.index("routerbench test splits of")
