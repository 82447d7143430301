"""Issue 25's targets in the coordination report: grading by the source's verdicts instead of
ours, and a target on the mean over several data sets (RouterBench's three) judged with a paired
bootstrap that resamples each set on its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from consortium.coord.answers.keys import agreement_for
from consortium.evaluation.recorded import baselines
from consortium.evaluation.recorded.outcomes import OutcomeTable, Verdicts, build_table
from consortium.evaluation.recorded.selection import (
    Interval,
    paired_bootstrap,
    paired_bootstrap_mean,
)
from consortium.records import load_records, write_records
from consortium.records.errors import RecordsError
from consortium.reports.coordination.pipeline import DatasetResult
from consortium.reports.coordination.report import declared, group_lines
from consortium.reports.coordination.targets import GroupTarget, group_summary
from tests.toy_records import MODELS, output_row, toy_manifest


def _disputed(folder: Path, dataset: str = "disputed", n: int = 40) -> Path:
    """Our grader finds strong right but on every fifth question and cheap-a right on even ones;
    the source marks strong wrong on every third question and cheap-a right everywhere. Question
    n has no reference (no verdict of ours) and the source marks strong right; on question n + 1
    all answer right and the source has no verdict for cheap-b's answer."""
    rows = []
    for q in range(n):
        gold = str(q)
        cheap = gold if q % 2 == 0 else str(q + 1000)
        rows.append(output_row(q, "cheap-a", 0, cheap, gold, source_correct=True))
        rows.append(output_row(q, "cheap-b", 0, str(q + 2000), gold, source_correct=False))
        strong = gold if q % 5 else str(q + 3000)
        rows.append(output_row(q, "strong", 0, strong, gold, source_correct=q % 3 != 0))
    extra = [output_row(n, m, 0, "5", None, source_correct=m == "strong") for m in MODELS]
    # one more: every sample has our verdict, but the source recorded none for cheap-b's
    extra += [
        output_row(n + 1, m, 0, "7", "7", source_correct=m != "cheap-b" or None) for m in MODELS
    ]
    manifest = toy_manifest(dataset).model_copy(update={"questions": n + 2})
    write_records(folder, manifest, [*rows, *extra])
    return folder


def _table(folder: Path, verdicts: Verdicts = "ours") -> OutcomeTable:
    key, same = agreement_for("number")
    return build_table(load_records(folder), key, same, verdicts=verdicts)


def test_source_verdicts_grade_every_sample_by_the_source_column(tmp_path: Path) -> None:
    folder = _disputed(tmp_path / "disputed")
    ours, source = _table(folder), _table(folder, "source")
    cheap, strong = MODELS.index("cheap-a"), MODELS.index("strong")
    # ours: the question without a reference is left out (the source marks one answer right)
    assert ours.n_questions == 41 and ours.ungraded == 1 and ours.verdicts == "ours"
    expected = [q % 5 != 0 for q in range(40)] + [True]
    assert baselines.single(ours, strong).correct.tolist() == expected
    assert baselines.single(ours, cheap).correct[:40].mean() == 0.5
    # the source's verdicts: the question missing one of cheap-b's is left out, not counted wrong
    assert source.n_questions == 41 and source.ungraded == 1 and source.verdicts == "source"
    assert "41" not in source.question_ids and "40" in source.question_ids
    assert baselines.single(source, cheap).correct[:40].all()
    expected = [q % 3 != 0 for q in range(40)] + [True]
    assert baselines.single(source, strong).correct.tolist() == expected
    # the same answers agree either way: only the verdicts moved
    assert [s[0].answer_class for s in ours.samples[7]] == [
        s[0].answer_class for s in source.samples[7]
    ]
    assert "Verdicts: the source's own" in declared(
        [{"verdicts": "source", "policies": []}]
    ) and "Verdicts: ours" in declared([{"verdicts": "ours", "policies": []}])


def test_a_set_with_no_gradable_question_stops_with_its_reason(tmp_path: Path) -> None:
    rows = [
        output_row(q, m, 0, str(q), str(q), m != "strong" or None) for q in range(6) for m in MODELS
    ]
    folder = tmp_path / "unsourced"
    write_records(folder, toy_manifest("unsourced").model_copy(update={"questions": 6}), rows)
    assert _table(folder).n_questions == 6
    with pytest.raises(RecordsError) as raised:
        _table(folder, "source")
    assert str(raised.value) == (
        "unsourced: no question has the source's verdicts on every sample; no sample of strong "
        "has one (try --verdicts ours, or leave the data set out)"
    )


def test_the_group_interval_weighs_every_set_the_same() -> None:
    # set 1: 10 questions, no difference; set 2: 30 questions, +1 on every one
    small = (np.ones(10, bool), np.ones(10, bool))
    large = (np.ones(30, bool), np.zeros(30, bool))
    interval = paired_bootstrap_mean([small, large])
    assert interval.mean == pytest.approx(50.0)  # pooled questions would say 75
    assert interval.low == pytest.approx(50.0) and interval.high == pytest.approx(50.0)
    # one set: the interval of every earlier report (the formula before sets were added)
    first, second = np.arange(50) % 3 == 0, np.arange(50) % 4 == 0
    diff = first.astype(float) - second.astype(float)
    draws = np.random.default_rng(0).integers(0, 50, size=(4000, 50))
    low, high = np.percentile(diff[draws].mean(axis=1) * 100, [2.5, 97.5])
    assert paired_bootstrap(first, second) == Interval(diff.mean() * 100, low, high)


def _result(table: OutcomeTable, vote_right: np.ndarray) -> DatasetResult:
    """The train-chosen best single and a 'weighted vote' row with the given verdicts."""
    singles = [baselines.single(table, m) for m in range(table.n_models)]
    vote = baselines.weighted_vote(table)
    vote.correct = vote_right
    best = int(np.argmax([s.correct[table.indices("train")].mean() for s in singles]))
    return DatasetResult(table, best, 1.0, runs=[*singles, vote])


def test_a_group_target_is_judged_on_the_mean_over_its_sets(tmp_path: Path) -> None:
    names = ("set_a", "set_b")
    results = {}
    for name in names:
        table = _table(_disputed(tmp_path / name, name, n=200))
        strong = baselines.single(table, MODELS.index("strong")).correct
        # the vote: right wherever strong is, and on set_b also where strong is wrong
        results[name] = _result(table, strong | (name == "set_b"))
    target = GroupTarget(names, 90.0)
    summary = group_summary("toy mean", target, results)
    assert summary is not None
    singles = summary["best_single_per_set"]
    assert summary["best_singles"] == ["strong", "strong"]
    assert summary["best_single_accuracy"] == pytest.approx(np.mean(singles))
    (vote,) = summary["policies"]
    assert vote["per_set"][0] == pytest.approx(singles[0])
    assert vote["per_set"][1] == pytest.approx(100.0)
    assert vote["vs_best_single"]["mean"] == pytest.approx((100.0 - singles[1]) / 2)
    line = next(line for line in group_lines(summary) if "weighted vote" in line)
    assert f"{vote['accuracy']:.2f}" in line and ": missed (short by" in line
    # at a lower bar the same mean meets it: the interval stays above 0 (set_b gains a fifth)
    summary["target"] = 80.0
    line = next(line for line in group_lines(summary) if "weighted vote" in line)
    assert ": met (per set" in line
    # above the bar but the interval reaches 0: missed for the interval alone
    vote["vs_best_single"]["low"] = 0.0
    line = next(line for line in group_lines(summary) if "weighted vote" in line)
    assert ": missed (the CI is not above 0) (per set" in line
    # a judged policy missing from one set is named, not judged
    results["set_b"].runs = [r for r in results["set_b"].runs if not r.name.startswith("weighted")]
    partial = group_summary("toy mean", target, results)
    assert partial is not None and partial["policies"] == []
    assert group_lines(partial)[-3] == (
        "- not judged, not run on every set: weighted vote (train accuracy)"
    )
    # a group whose sets were not all run is not judged
    assert group_summary("toy mean", target, {"set_a": results["set_a"]}) is None
