"""Answer-aware coordination on small records folders written here: agreement classes,
votes and cascades, the multi-turn replay simulation's roles, the docstring checks in the real
sandbox, training, and the `consortium coordinate` command end to end."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consortium.coord.answers.classes import NO_ANSWER
from consortium.coord.answers.keys import agreement_for
from consortium.evaluation.recorded import baselines
from consortium.evaluation.recorded.episodes import VERIFIER, WORKER, Episodes
from consortium.evaluation.recorded.outcomes import OutcomeTable, build_table, classes_of
from consortium.evaluation.recorded.runs import train_accuracy, vote
from consortium.evaluation.recorded.scorer import full_cascade_family
from consortium.evaluation.recorded.selection import select_cheap
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evaluation.recorded.transcript_text import transcript_text
from consortium.records import load_records, write_records
from consortium.reports.coordination.pipeline import READING, run_dataset
from consortium.reports.coordination.report import target_lines
from consortium.tasks.code_checks import CheckResult, check_all
from consortium.tasks.docstring_examples import docstring_examples
from consortium.train.trinity.recorded_turns import Budget, run_head, train_head
from tests.toy_records import COSTS, MODELS, output_row, toy_manifest, toy_rows


@pytest.fixture()
def toy(tmp_path: Path) -> Path:
    folder = tmp_path / "toy"
    write_records(folder, toy_manifest("toy"), toy_rows())
    return folder


@pytest.fixture()
def clusters(tmp_path: Path) -> OutcomeTable:
    """cheap-a's six samples: on odd questions a wrong program that passes its examples first,
    then two right ones (pass), then three alike that fail; on even ones the first is right."""
    rows, checks = [], {}
    for q in range(60):
        gold = str(q)
        first = gold if q % 2 == 0 else str(q + 1000)
        answers = [first, gold, gold, "-1", "-1", "-1"]
        for k, answer in enumerate(answers):
            rows.append(output_row(q, "cheap-a", k, answer, gold))
            checks[(str(q), "cheap-a", k)] = k < 3
    folder = tmp_path / "clusters"
    write_records(folder, toy_manifest("clusters"), rows)
    key, same = agreement_for("number")
    return build_table(load_records(folder), key, same, checks)


def test_filter_and_cluster_submits_the_largest_passing_cluster(clusters: OutcomeTable) -> None:
    """The example filter takes the first passing answer, the plain vote the failing majority;
    filter-and-cluster the passing majority."""
    table = clusters
    odd = np.array([int(q) % 2 == 1 for q in table.question_ids])
    clustered = baselines.filter_and_cluster(table, [0], 6)
    assert clustered.correct.all()
    assert (clustered.calls == 6).all() and np.allclose(clustered.cost, 0.006)
    assert not baselines.example_filter(table, [0], 6).correct[odd].any()
    weights = train_accuracy(table)
    for q in np.flatnonzero(odd):
        plain = vote(table, int(q), [(0, k) for k in range(6)], weights)
        assert plain is not None and not plain.correct
    family = baselines.filter_and_cluster_family(table)
    # 7 sets of models × the limits 3, 5 and 10 clipped to the 6 samples recorded
    assert len(family) == 7 * 3 and {run.params["samples"] for run in family} == {3, 5, 6}


def test_the_answer_rule_prefers_answers_that_pass_their_check(clusters: OutcomeTable) -> None:
    episodes = Episodes(clusters)
    t = episodes.start(clusters.question_ids.index("1"))
    for _ in range(5):  # samples 0-4: wrong (passes), right, right (pass), -1, -1 (fail)
        episodes.step(t, 0, WORKER)
    current = t.current()
    # -1 and the right answer have two votes each; only the right one passes its check
    assert current is not None and current.checked and episodes.correct(t)


def test_latex_answers_agree_by_value_and_missing_answers_do_not() -> None:
    key, same = agreement_for("latex")
    assert classes_of(["\\frac{1}{2}", "0.5", "2", None, "1/2"], key, same) == [
        0,
        0,
        1,
        NO_ANSWER,
        0,
    ]
    key, same = agreement_for("number")
    assert classes_of(["75.00", "75", "1,000", "1000.0"], key, same) == [0, 0, 1, 1]


def test_votes_and_cascades_on_the_toy(toy: Path) -> None:
    table = outcome_table(load_records(toy))
    test = table.indices("test")
    strong = baselines.single(table, 2)
    assert strong.correct.all()
    cascade = baselines.mot_cascade(table, [0, 1], 2, 1.0)
    even = np.array([int(q) % 2 == 0 for q in table.question_ids])
    # cheap models agree on even questions: accepted there, the strong model is never paid for
    assert np.allclose(cascade.cost[even], 2 * 0.001 + 0.002)
    assert np.allclose(cascade.cost[~even], 2 * 0.001 + 0.002 + 0.01)
    assert cascade.correct.all()
    # a plain vote of the three first samples: cheap models outvote... nobody on odd (all differ)
    vote = baselines.weighted_vote(table)
    assert vote.correct[test].all()  # ties go to the most accurate model (strong)
    assert vote.calls[test].tolist() == [3.0] * len(test)


def test_the_learned_cascade_matches_the_vote_and_skips_the_strong_model_on_agreement(
    toy: Path,
) -> None:
    table = outcome_table(load_records(toy))
    train = table.indices("train")
    vote = baselines.weighted_vote(table)
    family = full_cascade_family(table)
    never_stops = family[-1]
    assert np.allclose(never_stops.cost, vote.cost) and (never_stops.correct == vote.correct).all()
    chosen = select_cheap(family, train, float(vote.correct[train].mean()) - 0.003)
    assert chosen is not None and chosen.correct.all()
    even = np.array([int(q) % 2 == 0 for q in table.question_ids])
    # the two cheap models agree on even questions: the scorer stops before the strong model
    assert np.allclose(chosen.cost[even], 0.001 + 0.002)
    assert np.allclose(chosen.cost[~even], 0.001 + 0.002 + 0.01)
    assert chosen.cost.mean() < 0.7 * vote.cost.mean()


def test_verifier_accepts_exactly_on_agreement_and_every_turn_is_paid(toy: Path) -> None:
    table = outcome_table(load_records(toy))
    episodes = Episodes(table)
    odd = table.question_ids.index("1")
    t = episodes.start(odd)
    episodes.step(t, 0, WORKER)  # cheap-a's sample 0: wrong
    episodes.step(t, 1, VERIFIER)  # cheap-b disagrees: REVISE, still charged
    assert not t.accepted and t.rejected_last
    assert t.cost == pytest.approx(0.003)
    episodes.step(t, 0, VERIFIER)  # cheap-a's *second* sample agrees with its first: ACCEPT
    assert t.accepted and t.used[0] == 2
    assert not episodes.correct(t)
    assert not episodes.available(t)[0]  # cheap-a has no third sample: masked
    even = table.question_ids.index("0")
    t = episodes.start(even)
    episodes.step(t, 1, WORKER)
    episodes.step(t, 0, VERIFIER)
    assert t.accepted and episodes.correct(t) and t.calls == 2


def test_sep_cma_es_learns_to_ask_the_model_that_is_right(toy: Path) -> None:
    table = outcome_table(load_records(toy))
    episodes = Episodes(table, max_turns=2)
    train = table.indices("train")
    weights = train_head(episodes, train, "es", 0.0, 0.01, Budget(15, 8, 16), seed=0)
    run = run_head(episodes, weights, "es")
    assert run.correct[table.indices("test")].mean() == 1.0
    untrained = run_head(episodes, np.zeros_like(weights), "zeros")
    assert untrained.correct[table.indices("test")].mean() < 1.0


PROMPT = '''def add(a, b):
    """Add two numbers.
    >>> add(1, 2)
    3
    >>> add(-1, 1)
    0
    """
'''


def test_code_checks_run_the_docstring_examples_in_the_sandbox() -> None:
    assert docstring_examples(PROMPT) == [("add(1, 2)", "3"), ("add(-1, 1)", "0")]
    right = "    return a + b\n"
    wrong = "def add(a, b):\n    return a - b\n"
    also_right = "def add(a, b):\n    return b + a\n"
    results = check_all([(PROMPT, right), (PROMPT, wrong), (PROMPT, also_right)])
    assert results[(PROMPT, right)].passed
    assert not results[(PROMPT, wrong)].passed
    # programs agree when they behave the same on the examples
    assert results[(PROMPT, right)].signature == results[(PROMPT, also_right)].signature
    assert results[(PROMPT, right)].signature != results[(PROMPT, wrong)].signature


def test_a_task_in_words_runs_the_program_alone_and_agrees_only_on_identical_programs() -> None:
    words = "Write a function to find the shared elements from the given two lists."
    program = "def shared(a, b):\n    return set(a) & set(b)\n"
    broken = "def shared(a, b):\n    return set(a) &\n"
    results = check_all([(words, program), (words, broken)])
    # it runs (no example to check: not passed), so it has an answer class of its own text
    assert results[(words, program)] == CheckResult(False, "[]")
    assert results[(words, broken)] == CheckResult(False, "<failed to run>")


def test_coordinate_command_writes_the_report_for_any_data_set(tmp_path: Path) -> None:
    for name in ("toy", "another"):
        write_records(tmp_path / name, toy_manifest(name), toy_rows(40))
    out = tmp_path / "reports" / "coordination"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "consortium",
            "coordinate",
            "--records",
            str(tmp_path / "toy"),
            "--records",
            str(tmp_path / "another"),
            "--out",
            str(out),
            "--generations",
            "2",
            "--popsize",
            "4",
            "--minibatch",
            "8",
            "--cache",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.with_suffix(".json").read_text())
    assert [d["dataset"] for d in report["datasets"]] == ["toy", "another"]
    names = [p["name"] for p in report["datasets"][0]["policies"]]
    assert "weighted vote (train accuracy)" in names and "ModelSwitch rule" in names
    assert any(n.startswith("TRINITY replay") for n in names)
    plots = sorted(path.name for path in out.parent.glob("*.png"))
    assert plots == ["coordination-another-frontier.png", "coordination-toy-frontier.png"]
    assert (out.parent / plots[1]).stat().st_size > 1000
    markdown = out.with_suffix(".md").read_text()
    assert "![frontier](coordination-toy-frontier.png)" in markdown
    assert "Thinker has no replay simulation" in markdown
    assert "the weighted vote matched for less: learned scorer cascade [all 3 models" in markdown


@pytest.mark.parametrize("command", [["coordinate"], ["demo"]])
def test_a_missing_records_folder_is_one_line(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "consortium", *command, "--records", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert done.returncode != 0
    assert "records folder not found" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_example_filter_submits_the_first_checked_answer_and_pays_for_every_sample(
    toy: Path,
) -> None:
    records = load_records(toy)
    key, same = agreement_for("number")
    # checks: cheap-a's first sample passes on even questions; on odd ones only strong's does
    checks = {}
    for q in range(60):
        checks[(str(q), "cheap-a", 0)] = q % 2 == 0
        checks[(str(q), "cheap-a", 1)] = False
        checks[(str(q), "cheap-b", 0)] = False
        checks[(str(q), "strong", 0)] = q % 2 == 1
    table = build_table(records, key, same, checks)
    even = np.array([int(q) % 2 == 0 for q in table.question_ids])
    escalating = baselines.example_filter(table, [0, 2], 2)
    assert escalating.correct.all()
    assert np.allclose(escalating.cost[even], 0.001) and (escalating.calls[even] == 1).all()
    assert np.allclose(escalating.cost[~even], 0.012) and (escalating.calls[~even] == 3).all()
    alone = baselines.example_filter(table, [0], 2)
    # nothing passes on odd questions: the first answer asked for, both samples paid
    assert not alone.correct[~even].any() and np.allclose(alone.cost[~even], 0.002)
    family = baselines.example_filter_family(table)
    # at most 2 samples are recorded: the limits 3, 5 and 10 would all ask for the same two
    assert {run.params["samples"] for run in family} == {1, 2}
    assert len(family) == (3 + 3 * 2) * 2


def test_the_cost_floor_pays_for_the_cheapest_right_answer_on_just_enough_questions(
    toy: Path, clusters: OutcomeTable
) -> None:
    key, same = agreement_for("number")
    table = build_table(load_records(toy), key, same)
    every = np.arange(table.n_questions)
    cheap, strong = COSTS["cheap-a"], COSTS["strong"]
    # even questions: cheap-a's first sample is right; odd ones: only the strong model is
    assert baselines.cost_floor(table, every, 30) == pytest.approx(30 * cheap / 60)
    assert baselines.cost_floor(table, every, 31) == pytest.approx((30 * cheap + strong) / 60)
    assert baselines.cost_floor(table, every, 60) == pytest.approx(30 * (cheap + strong) / 60)
    assert baselines.cost_floor(table, every, 61) is None
    # a right second sample costs both samples (sample k is served after the earlier ones)
    assert baselines.cost_floor(clusters, every, 60) == pytest.approx(30 * 3 * cheap / 60)


def test_a_question_we_cannot_grade_counts_wrong_only_when_the_source_says_all_are_wrong(
    tmp_path: Path,
) -> None:
    # 98: no reference, the source marks strong's answer right; 99: the source marks all wrong
    unknown = [output_row(98, m, 0, "5", None, m == "strong") for m in MODELS]
    all_wrong = [output_row(99, m, 0, "5", None, False) for m in MODELS]
    folder = tmp_path / "partly"
    manifest = toy_manifest("partly").model_copy(update={"questions": 62})
    write_records(folder, manifest, [*toy_rows(), *unknown, *all_wrong])
    key, same = agreement_for("number")
    table = build_table(load_records(folder), key, same)
    assert "98" not in table.question_ids and "99" in table.question_ids
    assert table.n_questions == 61 and table.ungraded == 1
    strong = baselines.single(table, MODELS.index("strong"))
    assert strong.correct.sum() == 60  # right everywhere it can be, wrong on 99 like everyone
    assert not strong.correct[table.question_ids.index("99")]


def test_the_ceiling_counts_a_question_right_when_any_recorded_sample_is(
    clusters: OutcomeTable,
) -> None:
    every = np.arange(clusters.n_questions)
    # odd questions: the first sample is wrong but the second is right
    assert baselines.ceiling(clusters, every) == 1.0
    assert baselines.oracle(clusters).correct.mean() == 0.5


def _policy(name: str, acc: float, train: float, cost: float, train_cost: float) -> dict[str, Any]:
    return {
        "name": name,
        "family": "cascade",
        "accuracy": acc,
        "train_accuracy": train,
        "cost_vs_best_single": cost,
        "train_cost_vs_best_single": train_cost,
        "note": "",
    }


def test_the_cost_target_counts_a_policy_only_when_train_agrees_and_says_the_floor() -> None:
    summary: dict[str, Any] = {"best_single_accuracy": 90.0, "best_single_train_accuracy": 80.0}
    lucky = _policy("lucky", 90.0, 70.0, 0.10, 0.10)  # ties on test, 10 pts short on train
    dear = _policy("dear", 90.5, 80.5, 0.60, 0.60)
    summary |= {"policies": [lucky, dear], "cost_floor_vs_best_single": 0.05}
    summary["ceiling_accuracy"] = 97.5
    ceiling, line = target_lines(summary, None)
    assert ceiling.startswith("- ceiling: 97.50 % of the test questions have a right answer")
    assert (
        ": missed; the cheapest policy within 0.3 pts above 30 % is dear (90.50) at 60.0 %" in line
    )
    assert "5.0 % of the best single's $, so the pool allows it" in line
    assert line.endswith("not counted (outside it on train): lucky 90.00 at 10.0 %")
    summary["policies"].append(_policy("backed", 89.8, 79.9, 0.25, 0.28))
    _, line = target_lines(summary, None)
    assert ": met by backed 89.80 at 25.0 % (within it on the train split too)" in line
    assert "floor" not in line and "lucky 90.00" in line
    # a floor above 30 %: no policy is within 0.3 pts for less (here none is at all)
    summary |= {"policies": [dear], "cost_floor_vs_best_single": 0.45}
    _, line = target_lines(summary, None)
    assert "45.0 % of the best single's $, so no policy over this pool can meet" in line


def _bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A stand-in static encoder: each word a fixed random vector, a text the sum of its words'."""
    rows = []
    for text in texts:
        total = np.zeros(24)
        for word in text.split():
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
            total += np.random.default_rng(seed).normal(size=24)
        rows.append(total)
    return np.array(rows)


def test_the_transcript_text_feature_is_the_question_and_the_answers_so_far(
    tmp_path: Path,
) -> None:
    # cheap-a has three samples with different answers, strong one
    rows = []
    for q in range(40):
        rows += [output_row(q, "cheap-a", k, str(10 * q + k), str(10 * q)) for k in range(3)]
        rows.append(output_row(q, "strong", 0, str(10 * q), str(10 * q)))
    folder = tmp_path / "texts"
    write_records(folder, toy_manifest("texts").model_copy(update={"questions": 40}), rows)
    records = load_records(folder)
    key, same = agreement_for("number")
    table = build_table(records, key, same)
    text = transcript_text(records, table, _bag_of_words, dims=4)
    cheap, strong = MODELS.index("cheap-a"), MODELS.index("strong")
    q = table.question_ids.index("7")

    def joined(*parts: str) -> np.ndarray:
        total = _bag_of_words([" ".join(parts)])[0]
        return np.asarray(total / np.linalg.norm(total))

    # a transcript's feature is the joined text's: the question, then each answer it holds
    assert np.allclose(
        text.unit(q, [(cheap, 1), (strong, 0)]),
        joined("question 7", "the answer is 71", "the answer is 70"),
    )
    # the projection is fitted on the train split only: the question alone, and with each
    # model's first answer
    train_points = []
    for t in table.indices("train"):
        train_points.append(text.unit(int(t), []))
        train_points += [text.unit(int(t), [(m, 0)]) for m in (cheap, strong)]
    assert text.projection is not None and text.dims == 4
    assert np.allclose(text.projection.mean, np.mean(train_points, axis=0))
    episodes = Episodes(table, text=text)
    assert episodes.n_features == episodes.n_structured + 4
    t = episodes.start(q)
    question_only = text.projection.apply(joined("question 7"))
    assert np.allclose(episodes.features(t)[episodes.n_structured :], question_only)
    episodes.step(t, cheap, WORKER)
    episodes.step(t, cheap, WORKER)  # the second ask gets the second sample
    assert t.asked == [(cheap, 0), (cheap, 1)]
    expected = text.projection.apply(joined("question 7", "the answer is 70", "the answer is 71"))
    assert np.allclose(episodes.features(t)[episodes.n_structured :], expected)
    result = run_dataset(table, Budget(generations=2, popsize=4, minibatch=8), (0.0,), text=text)
    reading = next(r for r in result.runs if r.name == READING)
    assert reading.params["text_dims"] == 4 and reading.correct.shape == (table.n_questions,)
