"""`consortium coordinate` and `train coordinator` on a pool whose prices are all 0 (a user's own
llama.cpp models): a family the pool cannot form is left out with its reason, cost can be
measured in tokens or seconds instead of dollars, and a train split on which every candidate ties
names no winner."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from consortium.core.errors import ConfigError
from consortium.evaluation.recorded.cost_measure import in_measure
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.selection import TIE, ties, untold, untold_on_cost
from consortium.evaluation.recorded.tables import outcome_table
from consortium.records import OutputRow, load_records, write_records
from consortium.records.errors import RecordsError
from consortium.reports.coordination.command import CoordinationRequest, run_coordination
from consortium.reports.coordination.pipeline import UNTOLD, run_dataset
from consortium.reports.coordination.report import dataset_summary, markdown
from consortium.train.answers.policy import fit_answer_policy
from consortium.train.trinity.recorded_turns import Budget
from tests.test_cli import cli, one_line_error
from tests.toy_records import output_row, toy_manifest, toy_rows

TINY = Budget(generations=1, popsize=2, minibatch=4)
TOKENS = {"cheap-a": (3, 2), "cheap-b": (4, 4), "strong": (20, 30)}
"""(tokens in, tokens out) per call: the models differ in what they spend, not in price."""


def _zero_price(row: OutputRow, sample_seconds: float | None = 0.25) -> OutputRow:
    tokens_in, tokens_out = TOKENS[row.model]
    seconds = None if sample_seconds is None else sample_seconds * (1 + row.sample)
    return dataclasses.replace(
        row, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=0.0, latency_s=seconds
    )


def zero_price_records(folder: Path, *, seconds: bool = True) -> Path:
    """The toy records (cheap models right on even questions, strong always right) with every
    cost 0 USD, each model spending its own tokens and each sample its own wall time."""
    rows = [_zero_price(row, 0.25 if seconds else None) for row in toy_rows(30)]
    write_records(folder, toy_manifest("zero"), rows)
    return folder


def all_wrong_records(folder: Path) -> Path:
    """Two zero-price models that answer every question wrong (the small local models on
    arithmetic): the train split cannot tell any two policies apart."""
    rows = [
        _zero_price(output_row(q, model, sample, str(q + 7 + sample), str(q)))
        for q in range(30)
        for model in ("cheap-a", "strong")
        for sample in range(2)
    ]
    manifest = toy_manifest("wrong")
    manifest = manifest.model_copy(
        update={
            "models": ["cheap-a", "strong"],
            "prices": {m: manifest.prices[m] for m in ("cheap-a", "strong")},
        }
    )
    write_records(folder, manifest, rows)
    return folder


def _run(correct: list[bool], cost: list[float]) -> PolicyRun:
    n = len(correct)
    return PolicyRun("p", np.array(correct), np.array(cost, dtype=float), np.ones(n), np.ones(n))


# --- what a tie is ------------------------------------------------------------------------------


def test_runs_tie_when_their_train_objectives_are_equal_and_not_when_one_question_differs() -> None:
    questions = np.arange(4)
    same = [_run([True, False, False, True], [1, 1, 1, 1]) for _ in range(3)]
    assert untold(same, questions, 0.0, 1.0) and ties(same, questions, 0.0, 1.0) == 3
    # one question apart: 1 / 4 of accuracy, far above TIE
    apart = [*same, _run([True, True, False, True], [1, 1, 1, 1])]
    assert not untold(apart, questions, 0.0, 1.0) and ties(apart, questions, 0.0, 1.0) == 1
    # one candidate is a choice made by nothing, not a tie the split failed to break
    assert not untold(same[:1], questions, 0.0, 1.0)
    # equal accuracy, cost differs: at λ = 0 they tie, at λ > 0 the cheaper wins
    dearer = _run([True, False, False, True], [3, 3, 3, 3])
    assert untold([same[0], dearer], questions, 0.0, 1.0)
    assert not untold([same[0], dearer], questions, 0.5, 1.0)
    # the same cost reached by another sum ties though the floats differ in the last bit; a
    # difference above TIE does not
    two = np.arange(2)
    split, whole = _run([True, True], [0.1, 0.2]), _run([True, True], [0.3, 0.0])
    assert split.cost.mean() != whole.cost.mean()
    assert untold([split, whole], two, 1.0, 1.0)
    nudged = _run([True, True], [0.3 + 4 * TIE, 0.0])
    assert not untold([split, nudged], two, 1.0, 1.0)


def test_a_cheapest_pick_is_untold_when_every_eligible_member_costs_the_same() -> None:
    questions = np.arange(2)
    free = [_run([True, True], [0, 0]), _run([True, False], [0, 0])]
    assert untold_on_cost(free, questions, 0.5)  # both eligible, both free
    assert not untold_on_cost(free, questions, 0.9)  # one eligible: the floor told them apart
    priced = [_run([True, True], [1, 1]), _run([True, True], [2, 2])]
    assert not untold_on_cost(priced, questions, 0.5)


# --- cost in tokens or seconds -------------------------------------------------------------------


def test_a_table_in_tokens_or_seconds_costs_each_sample_what_it_spent(tmp_path: Path) -> None:
    records = load_records(zero_price_records(tmp_path / "zero"))
    dollars = outcome_table(records)
    assert all(s.cost_usd == 0 for row in dollars.samples for per in row for s in per)
    tokens = in_measure(dollars, records, "tokens")
    seconds = in_measure(dollars, records, "seconds")
    cheap_a, strong = dollars.models.index("cheap-a"), dollars.models.index("strong")
    first = tokens.samples[0]
    assert [s.cost_usd for s in first[cheap_a]] == [5.0, 5.0]  # two samples, 3 + 2 tokens each
    assert [s.cost_usd for s in first[strong]] == [50.0]
    assert [s.cost_usd for s in seconds.samples[0][cheap_a]] == [0.25, 0.5]  # sample order
    # only the cost moved: answers and verdicts are the table's own
    assert [s.correct for s in first[cheap_a]] == [s.correct for s in dollars.samples[0][cheap_a]]


def test_seconds_need_every_sample_timed(tmp_path: Path) -> None:
    records = load_records(zero_price_records(tmp_path / "untimed", seconds=False))
    with pytest.raises(RecordsError, match="--cost seconds needs each sample's wall time"):
        in_measure(outcome_table(records), records, "seconds")


def test_zero_prices_leave_the_mot_family_out_in_dollars_and_form_it_in_tokens(
    tmp_path: Path,
) -> None:
    records = load_records(zero_price_records(tmp_path / "zero"))
    table = outcome_table(records)
    in_dollars = run_dataset(table, TINY, lambdas=(0.0,))
    left_out = [n for n in in_dollars.notes if n.startswith("MoT cascade: left out")]
    assert len(left_out) == 1 and "cheap-a 0, cheap-b 0, strong 0" in left_out[0]
    assert "--cost tokens or seconds" in left_out[0]
    assert not any(r.name.startswith("MoT cascade") for r in in_dollars.runs)
    summary = dataset_summary(in_dollars)
    text = markdown([summary], {}, tmp_path / "report")
    assert f"- {left_out[0]}" in text
    assert "not judged, the best single costs 0 $ per question" in text
    assert "Cost: dollars" in text

    in_tokens = run_dataset(in_measure(table, records, "tokens"), TINY, (0.0,), measure="tokens")
    assert not any("MoT cascade" in n for n in in_tokens.notes)
    mot = [r for r in in_tokens.runs if r.name.startswith("MoT cascade")]
    assert mot and all(r.params["strong"] == "strong" for r in mot)
    summary = dataset_summary(in_tokens)
    assert summary["cost_measure"] == "tokens"
    strong = next(p for p in summary["policies"] if p["name"] == "strong")
    assert strong["cost_per_question"] == 50.0
    text = markdown([summary], {}, tmp_path / "report")
    assert "Cost: tokens (--cost tokens)" in text and "| cost (tokens) / q |" in text


def test_train_coordinator_selects_on_tokens_and_keeps_dollar_figures(tmp_path: Path) -> None:
    folder = zero_price_records(tmp_path / "zero")
    with pytest.raises(ConfigError, match="try --cost tokens or seconds"):
        fit_answer_policy("mot-cascade", folder)
    policy = fit_answer_policy("mot-cascade", folder, cost="tokens").policy
    assert policy.selection.endswith("(cost in tokens)")
    assert policy.params["strong"] == "strong"
    assert policy.train.usd_per_question == 0.0  # the figures stay in dollars


# --- a train split that cannot tell the policies apart -------------------------------------------


def test_every_policy_at_zero_on_train_names_no_winner(tmp_path: Path) -> None:
    records = load_records(all_wrong_records(tmp_path / "wrong"))
    table = in_measure(outcome_table(records), records, "tokens")
    result = run_dataset(table, TINY, (0.0,), measure="tokens")
    assert result.singles_untold
    untold_lines = [n for n in result.notes if UNTOLD in n]
    assert untold_lines[0].startswith(f"{UNTOLD}: the 2 single models (cheap-a, strong)")
    frugal = next(r for r in result.runs if r.name.startswith("FrugalGPT"))
    assert "no winner" in frugal.note and "train-selected" not in frugal.note
    assert any(n.startswith(f"FrugalGPT scorer cascade: {UNTOLD}") for n in result.notes)
    text = markdown([dataset_summary(result)], {}, tmp_path / "report")
    assert "best single on train:" not in text
    assert "no best single on train (all tie), cheap-a is the reference" in text
    assert "not judged, the train split names no best single" in text
    assert "train-selected for accuracy" not in text


# --- the command ---------------------------------------------------------------------------------


def test_coordinate_cost_tokens_on_a_zero_price_folder(tmp_path: Path) -> None:
    folder = all_wrong_records(tmp_path / "wrong")
    out = tmp_path / "report"
    result = cli(
        "coordinate", "--records", str(folder), "--out", str(out), "--cost", "tokens",
        "--generations", "1", "--popsize", "2", "--minibatch", "4",
        "--cache", str(tmp_path / "cache"), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "wrong: train split cannot tell the single models apart; cost in tokens" in result.stdout
    assert f"  {UNTOLD}: the 2 single models" in result.stdout
    # in tokens cheap-a (5 a call) is cheaper than strong (50): the MoT family forms, and ties
    assert f"  MoT cascade: {UNTOLD}: its" in result.stdout
    assert "left out" not in result.stdout
    document = json.loads(out.with_suffix(".json").read_text())
    assert document["cost_measure"] == ["tokens"]
    summary = document["datasets"][0]
    assert summary["best_single_untold"] and summary["cost_measure"] == "tokens"
    assert any(UNTOLD in line for line in summary["selection_notes"])
    assert "Cost: tokens" in out.with_suffix(".md").read_text()


def test_coordinate_cost_seconds_without_wall_times_is_one_line(tmp_path: Path) -> None:
    folder = zero_price_records(tmp_path / "untimed", seconds=False)
    result = cli(
        "coordinate", "--records", str(folder), "--out", str(tmp_path / "r"), "--cost", "seconds"
    )  # fmt: skip
    one_line_error(result, "--cost seconds needs each sample's wall time")
    assert not (tmp_path / "r.md").exists()


def test_run_coordination_reports_in_seconds(tmp_path: Path) -> None:
    folder = zero_price_records(tmp_path / "zero")
    request = CoordinationRequest([folder], tmp_path / "report", TINY, (0.0,), cost="seconds")
    [summary] = run_coordination(request)
    assert summary["cost_measure"] == "seconds"
    strong = next(p for p in summary["policies"] if p["name"] == "strong")
    assert strong["cost_per_question"] == 0.25
    assert "Cost: seconds (--cost seconds)" in (tmp_path / "report.md").read_text()
