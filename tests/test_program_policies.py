"""The program filters as answer-aware rules: the example filter and filter-and-cluster decide on
`Seen` entries (their check and agreement class), rebuild from a policy folder's params, and run
live on code, where each reply's program is run on its prompt's docstring examples in the
sandbox, in a worker thread, never on the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from consortium.coord.answers import reading
from consortium.coord.answers.kinds import check_rule, rule_from
from consortium.coord.answers.live import AnswerAwareCoordinator
from consortium.coord.answers.programs import ExampleFilter, FilterAndCluster
from consortium.coord.answers.rules import NO_ANSWER, Ask, Seen, Submit
from consortium.coord.answers.stages import played_out
from consortium.core.errors import ConfigError
from consortium.core.types import Completion
from consortium.records import write_records
from consortium.tasks.base import Task
from consortium.train.answers.policy import fit_answer_policy
from tests.toy_records import toy_manifest, toy_rows

PROMPT = '''def add(a: int, b: int) -> int:
    """Add two numbers.
    >>> add(2, 3)
    5
    """
'''
PROGRAMS = {
    "times": "def add(a, b):\n    return a * b\n",  # fails the example: 6, not 5
    "cheat": "def add(a, b):\n    return 5 if (a, b) == (2, 3) else a - b\n",  # passes, unlike
    "plus": "def add(a, b):\n    return a + b\n",
    "swapped": "def add(a, b):\n    return b + a\n",  # other text, same behaviour as plus
}


def test_the_example_filter_stops_at_the_first_pass_and_skips_a_missing_sample() -> None:
    rule = ExampleFilter(("a", "b"), 3)
    assert rule.decide([]) == Ask((("a", 0),))
    seen = [Seen("a", 0, 0, checked=False)]
    assert rule.decide(seen) == Ask((("a", 1),))
    seen.append(Seen("a", 1, NO_ANSWER, available=False))  # past a's last sample: on to b
    assert rule.decide(seen) == Ask((("b", 0),))
    seen.append(Seen("b", 0, 1, checked=True))
    decision = rule.decide(seen)
    assert isinstance(decision, Submit) and decision.index == 2
    failing = [Seen(m, k, k, checked=False) for m in ("a", "b") for k in range(3)]
    fallback = rule.decide(failing)
    assert isinstance(fallback, Submit) and fallback.index == 0
    assert "none passed" in fallback.reason
    # with nothing answered at all the rule ends (the budget's stop plays it out)
    assert played_out(rule, []).index is None


def test_filter_and_cluster_votes_among_the_passing_answers_else_among_all() -> None:
    rule = FilterAndCluster(("a", "b"), {"a": 0.9, "b": 0.5}, 2)
    assert rule.decide([]) == Ask((("a", 0), ("a", 1), ("b", 0), ("b", 1)))
    # class 7 is the majority but fails its check; class 3 passes twice
    seen = [
        Seen("a", 0, 7, checked=False),
        Seen("a", 1, 7, checked=False),
        Seen("b", 0, 3, checked=True),
        Seen("b", 1, 3, checked=True),
    ]
    chosen = rule.decide(seen)
    assert isinstance(chosen, Submit) and chosen.index == 2
    nobody = [Seen(s.model, s.sample, s.answer_class, checked=False) for s in seen]
    voted = rule.decide(nobody)  # a's weight wins the vote of every answer
    assert isinstance(voted, Submit) and voted.index == 0 and "none passed" in voted.reason
    # unset checks: an answer that is there passes
    unset = [Seen("a", 0, NO_ANSWER), Seen("b", 0, 3), Seen("b", 1, NO_ANSWER, available=False)]
    assert rule.decide(unset) == Submit(1, "1 of 3 passed: largest cluster")


def test_the_kinds_rebuild_from_params_and_bad_params_are_refused() -> None:
    for rule in (
        ExampleFilter(("a", "b"), 3),
        FilterAndCluster(("a", "b"), {"a": 0.9, "b": 0.5}, 5),
    ):
        assert rule_from(rule.kind, rule.params()) == rule
        check_rule(rule)
    with pytest.raises(ValueError, match="names a model twice"):
        check_rule(ExampleFilter(("a", "a"), 3))
    with pytest.raises(ValueError, match="at least 1"):
        check_rule(FilterAndCluster(("a",), {}, 0))


def test_program_filters_are_fitted_on_code_records_only(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    write_records(folder, toy_manifest("toy"), toy_rows())
    for kind in ("example-filter", "filter-and-cluster"):
        with pytest.raises(ConfigError, match="answers of kind 'number', not code"):
            fit_answer_policy(kind, folder)


class ProgramCaller:
    """Model 'm' answers sample k with the k-th program, fenced as a chat model would."""

    def __init__(self, order: Sequence[str]) -> None:
        self.order = order
        self.calls: list[int] = []

    async def call(self, model: str, messages: object, **params: Any) -> Completion:
        k = int(params["seed"])
        self.calls.append(k)
        if k >= len(self.order):
            from consortium.core.errors import AgentError

            raise AgentError(model, "samples exhausted")
        return Completion(f"Here it is:\n```python\n{PROGRAMS[self.order[k]]}```\n", model)

    async def trace_stages(self, records: object) -> None:
        return None


def test_live_code_policies_check_programs_in_the_sandbox_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[int] = []
    check = reading.check_reply

    def recording(prompt: str, response: str) -> Any:
        threads.append(threading.get_ident())
        return check(prompt, response)

    monkeypatch.setattr(reading, "check_reply", recording)
    task = Task("add", PROMPT, "code", "test")
    order = ["times", "cheat", "plus", "swapped", "times", "times"]
    policies = [
        ExampleFilter(("m",), 6),
        FilterAndCluster(("m",), {"m": 1.0}, 6),
        rule_from("vote", {"models": ["m"], "weights": {"m": 1.0}, "samples": 6}),
    ]
    callers = [ProgramCaller(order) for _ in policies]

    async def each() -> tuple[list[Any], int]:
        done = []
        for rule, caller in zip(policies, callers, strict=True):
            team = AnswerAwareCoordinator(rule, "code", rule.kind)
            done.append(await team.run(task, caller))  # type: ignore[arg-type]
        return done, threading.get_ident()

    (filtered, clustered, voted), loop_thread = asyncio.run(each())
    # the first program that passes its example is the one that only passes the example
    assert PROGRAMS["cheat"] in filtered.answer and callers[0].calls == [0, 1]
    assert "stop: passed its check after 2" in filtered.notes
    # of the three that pass, plus and swapped behave alike on the probe calls: the largest
    # cluster (by text, the three would tie and the earliest, cheat, would win)
    assert PROGRAMS["plus"] in clustered.answer and len(callers[1].calls) == 6
    assert "stop: 3 of 6 passed: largest cluster" in clustered.notes
    # the plain vote reads agreement by behaviour too, and the three failing programs win it
    assert PROGRAMS["times"] in voted.answer
    assert threads and loop_thread not in threads
