"""Probe calls (consortium.tasks.probes): an example's call with one literal argument varied,
and the behaviour they add to a program's signature in the real sandbox, where one probe that
never returns costs its own entry only."""

from __future__ import annotations

import json
from pathlib import Path

from consortium.tasks.code_checks import ExampleCoverage, check_all, example_coverage
from consortium.tasks.probes import probe_calls

SMALL = '''def is_small(n):
    """Whether n is below 10.
    >>> is_small(3)
    True
    """
'''

TWO_ARGUMENTS = '''def repeat(text, times):
    """
    repeat("ab", 2) ➞ "abab"
    """
'''

DESCRIBED = '''def shift(xs, k):
    """
    For xs = [1, 2], k = 1 the output should be [2, 1]
    """
'''


def test_each_probe_varies_one_argument_of_an_example_and_keeps_its_type() -> None:
    assert probe_calls(SMALL) == [
        "is_small(4)",
        "is_small(2)",
        "is_small(0)",
        "is_small(-3)",
        "is_small(7)",
        "is_small(1)",
    ]
    probes = probe_calls(TWO_ARGUMENTS)
    assert "repeat('', 2)" in probes and "repeat('ba', 2)" in probes
    assert "repeat('ab', 3)" in probes and "repeat('ab', 0)" in probes
    # one argument at a time: the other keeps the example's value
    assert all(call.endswith(", 2)") or call.startswith("repeat('ab', ") for call in probes)
    assert "repeat('ab', 2)" not in probes  # the example's own call is not a probe
    assert len(probe_calls(TWO_ARGUMENTS, limit=3)) == 3


def test_keyword_examples_are_varied_by_keyword_and_prose_gives_no_probe() -> None:
    probes = probe_calls(DESCRIBED)
    assert "shift(xs=[], k=1)" in probes and "shift(xs=[1, 2], k=2)" in probes
    assert probe_calls("Write a function that shifts a list.") == []
    assert probe_calls('def f(x):\n    """Returns x doubled."""\n') == []


def test_programs_passing_the_examples_are_told_apart_by_the_probes() -> None:
    right = "def is_small(n):\n    return n < 10\n"
    narrow = "def is_small(n):\n    return n <= 3\n"
    results = check_all([(SMALL, right), (SMALL, narrow)])
    assert results[(SMALL, right)].passed and results[(SMALL, narrow)].passed
    assert results[(SMALL, right)].signature != results[(SMALL, narrow)].signature
    assert json.loads(results[(SMALL, right)].signature) == ["True"] * 7


def test_a_probe_that_never_returns_keeps_the_examples_verdict() -> None:
    spinning = "def is_small(n):\n    while n != 3:\n        pass\n    return True\n"
    result = check_all([(SMALL, spinning)])[(SMALL, spinning)]
    assert result.passed  # the example itself returns at once
    signature = json.loads(result.signature)
    assert signature[0] == "True"
    assert set(signature[1:]) <= {"<TimeoutError>", "<skipped>"} and len(signature) == 7


def test_the_check_cache_serves_a_second_run_and_keeps_only_current_programs(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "checks.json"
    right = "def is_small(n):\n    return n < 10\n"
    narrow = "def is_small(n):\n    return n <= 3\n"
    first = check_all([(SMALL, right), (SMALL, narrow)], cache)
    assert len(json.loads(cache.read_text())) == 2
    # a second run reads its verdicts from the cache: marked failed there, failed it is
    stored = {
        digest: [False, signature]
        for digest, (_, signature) in json.loads(cache.read_text()).items()
    }
    cache.write_text(json.dumps(stored))
    again = check_all([(SMALL, right)], cache)
    assert not again[(SMALL, right)].passed and first[(SMALL, right)].passed
    other = "def is_small(n):\n    return abs(n) < 10\n"
    check_all([(SMALL, right), (SMALL, other)], cache)
    assert len(json.loads(cache.read_text())) == 2  # the narrow program's entry is gone


def test_coverage_counts_tasks_with_examples_and_with_probes() -> None:
    no_arguments = 'def answer():\n    """\n    >>> answer()\n    42\n    """\n'
    words = "Write a function that shifts a list."
    coverage = example_coverage([SMALL, SMALL, no_arguments, words])
    assert coverage == ExampleCoverage(tasks=3, with_examples=2, with_probes=1)
    assert "in 2 of 3 tasks (1 with probe calls); on the other 1 no program" in coverage.text()
