"""Issue 51: ties on train keep the simplest team. Every selection on train (`--kind auto`, a
family's best, `coordinate`'s picks, evolve's) breaks a tie in the train objective by one rule:
the cheaper in the run's cost measure, then fewer calls a question, fewer parameters, the simpler
kind, the name; the selection line names what tied. And `coordinate`'s report judges the targets
only on the corpora they were set for, and says what is true of a cost target nobody can miss."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.selection import (
    UNTOLD,
    Standing,
    choose,
    select_best,
    select_cheap,
    tie_text,
)
from consortium.evaluation.recorded.tables import outcome_table
from consortium.records import OutputRow, load_records, write_records
from consortium.records.corpora import CREATED_BY, MOT, is_project_corpus
from consortium.records.schema import Manifest, Source
from consortium.reports.coordination.command import CoordinationRequest, run_coordination
from consortium.reports.coordination.pipeline import run_dataset
from consortium.reports.coordination.report import target_lines
from consortium.train.answers.best_kind import fit_best_kind
from consortium.train.answers.policy import fit_answer_policy
from consortium.train.trinity.recorded_turns import Budget
from tests.test_cli import cli
from tests.test_coordinate_zero_price import all_wrong_records
from tests.toy_records import cheapest_right_rows, output_row, toy_manifest, toy_rows

TINY = Budget(generations=1, popsize=2, minibatch=4)
TOKENS = {"cheap-a": 5, "cheap-b": 8, "strong": 50}


def _run(name: str, calls: list[float], params: dict[str, object] | None = None) -> PolicyRun:
    """Right on every question at $1 a question: runs that differ only in calls and params."""
    n = len(calls)
    return PolicyRun(name, np.ones(n, bool), np.ones(n), np.array(calls), np.ones(n), "cascade",
                     params=params or {})  # fmt: skip


def _standing(name: str, kind: str, calls: float = 1.0, parameters: int = 1) -> Standing:
    return Standing(name, 1.0, 0.5, 1.0, calls, parameters, kind)


# --- the rule -----------------------------------------------------------------------------------


def test_a_family_tie_keeps_the_configuration_with_fewer_calls_then_fewer_parameters() -> None:
    questions = np.arange(4)
    # the same train accuracy and cost: the one that goes on less often wins, wherever it stands
    goes_on = _run("goes on", [1, 1, 1, 2])
    stops = _run("stops", [1, 1, 1, 1])
    assert select_best([goes_on, stops], questions, 0.0, 1.0) is stops
    assert select_best([goes_on, stops], questions, 0.5, 1.0) is stops
    # the same calls too: fewer parameters (models named, τ, …)
    three = _run("three models", [1, 1, 1, 1], {"order": ["a", "b", "c"], "threshold": 0.5})
    two = _run("two models", [1, 1, 1, 1], {"order": ["a", "b"], "threshold": 0.5})
    assert select_best([three, two], questions, 0.0, 1.0) is two
    # the cheapest pick among equally cheap members follows the same rule
    assert select_cheap([goes_on, stops], questions, 0.5) is stops
    assert select_cheap([three, two], questions, 0.5) is two


def test_the_simpler_kind_then_the_name_break_what_is_left() -> None:
    tied = [
        _standing("b-cascade", "scorer-cascade"),
        _standing("a-vote", "vote"),
        _standing("z-single", "single"),
    ]
    choice = choose(tied)
    assert tied[choice.kept].name == "z-single" and choice.by == ("the simplest kind",)
    same_kind = [_standing("beta", "vote"), _standing("alpha", "vote")]
    assert choose(same_kind).kept == 1 and choose(same_kind).by == ("the first by name",)
    # a better objective is never given up for simplicity
    better = dataclasses.replace(tied[0], objective=1.01, calls=9.0, parameters=90)
    assert choose([*tied, better]).kept == 3 and choose([*tied, better]).by == ()


def test_the_tie_line_names_a_few_tied_candidates_and_says_when_all_tie() -> None:
    standings = [_standing(f"c{i}", "vote", calls=1 + i) for i in range(6)]
    standings.append(dataclasses.replace(standings[0], name="worse", objective=0.5))
    choice = choose(standings)
    text = tie_text(standings, choice, "configurations", 11)
    assert text == (
        "6 of 7 configurations tie on train at 50.00 %: c0, c1, c2 and 3 more; "
        "kept c0: the fewest calls a question"
    )
    every = choose(standings[:6])
    assert tie_text(standings[:6], every, "kinds", 11).startswith(
        f"{UNTOLD}: all 6 kinds tie on train at 50.00 % (11 questions): c0, c1, c2 and 3 more"
    )
    assert tie_text(standings[:1], choose(standings[:1]), "kinds", 11) == ""


# --- `--kind auto` ------------------------------------------------------------------------------


def _free(row: OutputRow) -> OutputRow:
    """The row at price 0, spending its model's tokens (a user's own llama.cpp pool)."""
    return dataclasses.replace(row, cost_usd=0.0, tokens_in=TOKENS[row.model], tokens_out=0)


def test_auto_keeps_single_where_a_cascade_ties_it_on_accuracy_and_dollars(tmp_path: Path) -> None:
    folder = tmp_path / "cheapest"
    write_records(folder, toy_manifest("cheapest"), cheapest_right_rows())
    said: list[str] = []
    policy = fit_best_kind(folder, say=said.append)
    # the scorer cascade asks cheap-a first and stops: same train accuracy, $ and calls as single
    assert "scorer-cascade: train 100.00 %, $0.00100 and 1.00 calls a question" in said
    assert policy.kind == "single" and policy.name == "auto-single:cheapest"
    assert policy.params == {"model": "cheap-a"}
    assert "5 of 6 kinds tie on train at 100.00 %: single, scorer-cascade, " in policy.selection
    assert "kept single: the cheapest, then the fewest parameters" in policy.selection


def test_a_tied_family_names_the_member_it_kept_once(tmp_path: Path) -> None:
    """The tie clause names the kept cascade and why; the selection line does not name it again
    after the rule (it did: "…, then the first by name: FrugalGPT scorer cascade […]")."""
    folder = tmp_path / "cheapest"
    write_records(folder, toy_manifest("cheapest"), cheapest_right_rows())
    policy = fit_answer_policy("scorer-cascade", folder).policy
    kept = "FrugalGPT scorer cascade [cheap-a→cheap-b, τ=0.50]"
    assert f"; kept {kept}: the cheapest, then the fewest parameters, " in policy.selection
    assert policy.selection.endswith("then the first by name")
    assert policy.selection.count(kept) == 2  # first of the tied ones, and the kept one


def test_auto_keeps_single_in_tokens_on_a_zero_price_pool(tmp_path: Path) -> None:
    folder = tmp_path / "free"
    write_records(folder, toy_manifest("free"), [_free(r) for r in cheapest_right_rows()])
    said: list[str] = []
    policy = fit_best_kind(folder, cost="tokens", say=said.append)
    assert "single: train 100.00 %, 5 tokens and 1.00 calls a question" in said
    # model-switch is as accurate and as free in dollars, but spends 8 times the tokens
    assert any(line.startswith("model-switch: train 100.00 %, 42.17 tokens") for line in said)
    assert policy.kind == "single" and policy.params == {"model": "cheap-a"}
    assert "ties to the cheaper on train (tokens)" in policy.selection
    # in dollars the same pool ties on cost too: the fewest calls decide, and it says so
    in_dollars = fit_best_kind(folder)
    assert in_dollars.kind == "single"
    assert f"{UNTOLD}: all 5 kinds tie on train at 100.00 %" in in_dollars.selection
    assert "kept single: the fewest calls a question" in in_dollars.selection


def test_train_coordinator_auto_says_the_train_split_cannot_tell_the_kinds_apart(
    tmp_path: Path,
) -> None:
    folder = all_wrong_records(tmp_path / "wrong")
    out = tmp_path / "team"
    result = cli(
        "train", "coordinator", "--kind", "auto", "--records", str(folder), "--out", str(out),
        "--cost", "tokens", "--cache", str(tmp_path / "cache"), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    text = " ".join(result.stdout.split())  # the console wraps long lines
    assert "auto-single:wrong: auto: the kind with the best train accuracy" in text
    assert f"{UNTOLD}: all 6 kinds tie on train at 0.00 % (16 questions): single, " in text
    assert "kept single: the cheapest" in text


# --- coordinate's picks and report --------------------------------------------------------------


def test_coordinates_best_single_is_the_cheaper_of_two_tied_on_train(tmp_path: Path) -> None:
    # cheap-b and strong are both always right; strong, later in the model list, costs less
    rows = [
        dataclasses.replace(row, cost_usd=0.0005) if row.model == "strong" else row
        for row in toy_rows(30)
        if row.model != "cheap-b"
    ]
    rows += [output_row(q, "cheap-b", 0, str(q), str(q)) for q in range(30)]
    write_records(tmp_path / "tied", toy_manifest("tied"), rows)
    table = outcome_table(load_records(tmp_path / "tied"))
    result = run_dataset(table, TINY, (0.0,))
    assert table.models.index("cheap-b") < table.models.index("strong")
    assert table.models[result.best_single] == "strong"


def _project_manifest(manifest: Manifest) -> Manifest:
    """The manifest as `consortium records import` writes one of the project's corpora."""
    source = Source(repo=MOT[0], commit=MOT[1], files=[])
    return manifest.model_copy(update={"created_by": CREATED_BY, "sources": [source]})


def test_the_targets_are_judged_only_on_the_corpora_they_were_set_for(tmp_path: Path) -> None:
    users = tmp_path / "math"  # a user's own records that happen to be called math
    write_records(users, toy_manifest("math"), toy_rows(30))
    project = tmp_path / "gsm8k"
    write_records(project, _project_manifest(toy_manifest("gsm8k")), toy_rows(30))
    assert not is_project_corpus(load_records(users).manifest)
    assert is_project_corpus(load_records(project).manifest)
    request = CoordinationRequest([users, project], tmp_path / "report", TINY, (0.0,))
    run_coordination(request)
    text = (tmp_path / "report.md").read_text()
    users_part, project_part = text.split("\n## gsm8k ")
    assert "accuracy ≥" not in users_part and "CI above 0" not in users_part
    assert "- accuracy ≥ 96.8 with the CI above 0: " in project_part


def test_a_project_corpus_is_the_whole_import_of_its_sources() -> None:
    project = _project_manifest(toy_manifest("gsm8k"))
    assert is_project_corpus(project)
    limited = project.model_copy(update={"notes": ["limited to the first 40 questions (by id)"]})
    recorded = project.model_copy(
        update={"sources": [Source(repo="live pool", commit="", files=[])]}
    )
    assert not is_project_corpus(limited) and not is_project_corpus(recorded)
    assert not is_project_corpus(project.model_copy(update={"created_by": "consortium record"}))
    assert not is_project_corpus(project.model_copy(update={"dataset": "mine"}))


def _summary(single: float, policies: list[tuple[str, str, float]]) -> dict[str, Any]:
    return {
        "best_single_accuracy": single,
        "best_single_train_accuracy": 9.09,
        "cost_measure": "tokens",
        "cost_floor_vs_best_single": 0.0,
        "policies": [
            {"name": name, "family": family, "accuracy": accuracy, "train_accuracy": 9.09,
             "cost_vs_best_single": 4.0, "train_cost_vs_best_single": 4.0, "note": ""}
            for name, family, accuracy in policies
        ],
    }  # fmt: skip


def test_the_cost_target_says_what_is_true_when_every_policy_scores_zero() -> None:
    nothing = _summary(0.0, [("tiny-a", "single", 0.0), ("model-switch", "cascade", 0.0)])
    [line] = target_lines(nothing, None)
    assert line.endswith(
        "not judged, every policy scores 0 % on test: there is no accuracy to keep at a lower cost"
    )
    assert "floor" not in line and "the pool allows it" not in line
    some = _summary(0.0, [("tiny-a", "single", 0.0), ("vote", "vote", 2.5)])
    [line] = target_lines(some, None)
    assert "not judged, the best single scores 0.00 % on test, within 0.3 pts of a policy" in line
