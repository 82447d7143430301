"""`consortium debates report` and `fit-gate` on a toy recorded debate whose outcomes are known
by construction; the learned rule of when to talk, live over the replay, as measured in process;
the make target's folders; bad input as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from consortium.coord.debate.gate import read_gate
from consortium.coord.debate.rule import DebateRule
from consortium.evaluation.debates.play import debated_questions
from consortium.evaluation.debates.policies import measure
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.records.corpora import import_recipe
from consortium.records.debate_corpora import FORD_RECIPES, debate_recipe, primary_folders
from consortium.records.split import split_of
from consortium.records.store import load_records, write_records
from consortium.replay.launch import ReplayServerProcess
from tests.debate_files import PATTERNS, write_toy_ford

ROOT = Path(__file__).resolve().parents[1]
N = 40
SPEAKERS = ("gpt-3.5-turbo", "gpt-4")


def consortium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "consortium", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    write_toy_ford(root, N)
    manifest, rows = import_recipe(debate_recipe("gpt35-gpt4", "toy", "run1", 2), root)
    write_records(root / "toy", manifest, rows)
    return root / "toy"


def test_the_report_gives_the_outcomes_the_toy_debates_were_built_with(
    toy: Path, tmp_path: Path
) -> None:
    result = consortium(
        "debates", "report", "--records", str(toy), "--out", "debates.md", "--http", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    (folder,) = json.loads((tmp_path / "debates.json").read_text())["folders"]
    kinds = list(PATTERNS)
    test = [kinds[i % 4] for i in range(N) if split_of("ford-toy", str(i)) == "test"]
    assert folder["test"] == len(test) and folder["best_single"] == "gpt-3.5-turbo"
    rows = {row["name"]: row for row in folder["rows"]}
    # every debate ends right: gpt-3.5 gives in to gpt-4's right answer, gpt-4 to gpt-3.5's, and
    # when both hold, gpt-3.5's right answer, stated first, takes the tie
    debate = rows["debate (recorded protocol)"]
    assert debate["accuracy"] == 100.0
    # without talking, gpt-3.5's first answer: wrong exactly where gpt-3.5 later gives in
    pick = rows["pick the stronger: its first answer unless all agree (never talk)"]
    assert pick["accuracy"] == pytest.approx(100 * (1 - test.count("gives in") / len(test)))
    calls = {"agree": 2, "gives in": 3, "holds": 4, "talked into": 4}
    assert debate["calls"] == pytest.approx(sum(calls[k] for k in test) / len(test))
    assert debate["versus"]["pick"]["low"] > 0  # the debate beats pick-the-stronger
    give_in = {g["model"]: g for g in folder["give_in"]}
    assert give_in["gpt-3.5-turbo"]["talked_out"] == 0
    assert give_in["gpt-3.5-turbo"]["talked_into"] == test.count("gives in")
    assert give_in["gpt-4"]["talked_into"] == test.count("talked into")
    page = (tmp_path / "debates.md").read_text()
    assert "Pool: replay of recorded debates of real models" in page
    assert "the debate beats the best single" in page
    assert folder["http"] == {"compared": N, "equal": N, "repeated": 0}
    assert f"on {N} of {N} questions (100.00 %" in page


def test_the_learned_rule_live_over_the_replay_is_the_rule_measured_in_process(
    toy: Path, tmp_path: Path
) -> None:
    result = consortium("debates", "fit-gate", "--records", str(toy), "--out", "gate", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and "disputed questions" in result.stdout
    gate = read_gate(tmp_path / "gate")
    assert gate.lead == "gpt-3.5-turbo" and gate.speakers == SPEAKERS
    rule = DebateRule(SPEAKERS, 2, lead=gate.lead)
    questions = debated_questions(load_records(toy))
    expected = measure("gate", rule, questions, gate)
    pool = tmp_path / "replay.toml"
    spec = f"debate:models={','.join(SPEAKERS)}:rounds=2:gate={tmp_path / 'gate'}"
    with ReplayServerProcess(None, "--write-pool", str(pool), records=[toy]):
        evaluated = run_evaluation(
            EvalConfig(
                pool,
                f"records:path={toy}:split=all",
                (spec,),
                baselines=False,
                traces=f"sqlite:///{tmp_path / 'traces.db'}",
            )
        )
    (results,) = evaluated.per_policy.values()
    index = {q.question_id: i for i, q in enumerate(questions)}
    got = {r.task.id: (r.grade.correct, r.calls) for r in results}
    want = {q: (bool(expected.correct[i]), int(expected.calls[i])) for q, i in index.items()}
    assert got == want


def test_bad_input_is_one_line(toy: Path, tmp_path: Path) -> None:
    (tmp_path / "gate").mkdir()
    (tmp_path / "gate/gate.json").write_text('{"speakers": ["a"]}')
    cases = {
        ("debates", "report", "--records", str(tmp_path), "--out", "x.md"): "no manifest.json",
        ("debates", "fit-gate", "--records", str(tmp_path / "nope"), "--out", "g"): "not found",
        (
            "ask",
            "--pool",
            str(ROOT / "reports/replay-pool.toml"),
            "--policy",
            "debate:rounds=x",
            "hi",
        ): "",
    }
    for args, said in cases.items():
        result = consortium(*args, cwd=tmp_path)
        assert (
            result.returncode == 1 and result.stderr.startswith("error:") and said in result.stderr
        )
        assert len(result.stderr.strip().splitlines()) == 1
    from consortium.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"gate\.json: lead: Field required"):
        read_gate(tmp_path / "gate")


def test_a_debate_spec_the_pool_cannot_run_is_one_line() -> None:
    from consortium.coord.registry import build_coordinator
    from consortium.core.errors import ConsortiumError
    from consortium.pool.config import parse_pool

    pool = parse_pool(
        {"models": [{"name": m, "model": m, "base_url": "http://127.0.0.1:1/v1"} for m in "ab"]}
    )
    assert build_coordinator("debate:models=a,b:stop=1", pool).rule.rounds == 1  # type: ignore[attr-defined]
    for spec, said in {
        "debate:models=a,z": "z",
        "debate:models=a,b:rounds=x": "rounds must be an integer",
        "debate:models=a,a": "two or more different models",
        "debate:models=a,b:speed=1": "is not one of",
    }.items():
        with pytest.raises(ConsortiumError, match=said):
            build_coordinator(spec, pool)


def test_make_debates_imports_every_recipe_and_reports_the_primary_runs() -> None:
    made = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-f",
            str(ROOT / "Makefile"),
            "-n",
            "-o",
            "install",
            "debates",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    importing, reporting = made.stdout.strip().splitlines()
    only = importing.split("--only ")[1].split()[0].split(",")
    assert sorted(only) == sorted(FORD_RECIPES)
    assert (
        reporting.split("--records records/")[1:]
        and [part.split()[0] for part in reporting.split("--records records/")[1:]]
        == primary_folders()
    )
