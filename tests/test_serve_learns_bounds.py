"""The report's bounds of what a guarded learner could show on a stream
(`demo.serve_learns.ceiling`): the guard's decision on the offline fit, and the least exploration
for adopting the team."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from consortium.coord.answers.folder import read_policy, write_policy
from consortium.demo.serve_learns.ceiling import exploration_floor, guard_ceiling
from consortium.demo.serve_learns.singles import single_policy
from consortium.demo.serve_learns.test_split import agreement, over_http
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evolve.guards import GuardConfig
from consortium.records.store import load_records
from consortium.train.answers.policy import fit_answer_policy


def _run(name: str, correct: list[bool], cost: float) -> PolicyRun:
    n = len(correct)
    return PolicyRun(name, np.array(correct), np.full(n, cost), np.ones(n), np.zeros(n))


def test_the_ceiling_is_the_guards_decision_on_the_labelled_rows_only() -> None:
    # the team wins rows 0-5; the cheap model loses them. Labelled: 4 of the wins (p = 1/16,
    # refused at α = 0.05) or all 6 (p = 1/64, adopted)
    cheap = _run("cheap", [False] * 6 + [True] * 4, 1.0)
    team = _run("team", [True] * 10, 5.0)
    assert not guard_ceiling(cheap, team, [0, 1, 2, 3, 8, 9], GuardConfig()).adopted
    decided = guard_ceiling(cheap, team, [0, 1, 2, 3, 4, 5], GuardConfig())
    assert decided.adopted and decided.evidence.wins == 6


def test_the_floor_explores_labelled_requests_until_the_guard_adopts_then_stops() -> None:
    cheap = _run("cheap", [False] * 12, 1.0)
    team = _run("team", [True] * 12, 11.0)
    order = list(range(12))
    labelled = {0, 2, 4, 6, 8, 10}  # the sign test needs 5 straight wins: the fifth is row 8
    floor = exploration_floor(cheap, team, order, labelled, delay=2, guard=GuardConfig())
    assert floor is not None and floor.labels == 5
    assert floor.adopted_at == 10  # row 8's label comes 2 answers later
    assert floor.explore_usd == pytest.approx(5 * 10.0)  # the team's calls beyond the cheap one's
    assert floor.stream_usd == pytest.approx(10 * 1.0 + 2 * 11.0)
    assert floor.share == pytest.approx(50 / 82)


def test_the_floor_is_none_when_the_guard_never_adopts() -> None:
    cheap = _run("cheap", [True] * 6, 1.0)
    team = _run("team", [True] * 6, 3.0)  # no more accurate, and dearer
    assert exploration_floor(cheap, team, range(6), {0, 1, 2, 3, 4, 5}, 1, GuardConfig()) is None


def test_the_test_split_over_http_is_what_the_records_runner_plays(
    small_records: dict[str, Path], tmp_path: Path
) -> None:
    """The report measures folders by `eval` over an HTTP replay; its bounds use the records
    runner: on a cascade and single models they agree question by question. Two folders of one
    policy are run once; two policies of one name are each run."""
    folder = small_records["date"]
    table = outcome_table(load_records(folder), tmp_path / "checks")
    folders = [tmp_path / "cheapest", tmp_path / "cascade", tmp_path / "same", tmp_path / "named"]
    cascade = fit_answer_policy("mot-cascade", folder).policy
    write_policy(folders[0], single_policy(folder, "cheapest"))
    write_policy(folders[1], cascade)
    write_policy(folders[2], single_policy(folder, "cheapest"))
    write_policy(folders[3], single_policy(folder, "most-accurate").model_copy(
        update={"name": cascade.name}))  # fmt: skip
    tested = over_http(folder, folders, table, f"sqlite:///{tmp_path / 'eval.db'}")
    test = table.indices("test")
    assert tested[folders[2]] is tested[folders[0]]
    assert not np.array_equal(tested[folders[3]].cost, tested[folders[1]].cost)
    for path in folders:
        played = run_rule(table, read_policy(path).rule(), path.name)  # type: ignore[arg-type]
        differing, dollars = agreement(tested[path], played, test)
        assert differing == 0 and dollars < 1e-12
        assert (
            tested[path].calls[test].sum() > 0
            and tested[path].cost[table.indices("train")].sum() == 0
        )
    # a verdict flipped on one question is counted
    played.correct[test[0]] = not played.correct[test[0]]
    assert agreement(tested[folders[1]], played, test)[0] == 1
