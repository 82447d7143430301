"""The examples a code prompt writes for its own function, in the forms HumanEval-style prompts
use, and the prose lines that look like examples but must not be run."""

from __future__ import annotations

from consortium.tasks.code_checks import check_all
from consortium.tasks.docstring_examples import docstring_examples

DOCTEST_COMPARISONS = '''def count(xs):
    """Count the items.
    >>> count([]) == 0
    >>> count([1, 2]) == 2
    """
'''

CALL_LINES = '''def encrypt(s):
    """Rotate the alphabet.
    For example:
    encrypt('hi') returns 'lm'
    * encrypt('gf') -> 'kj'
    encrypt('et') ➞ 'ix' (the last one)
    encrypt('ab') = 'ef' # a comment
    is_ok('x') => true
    encrypt(hi) => 'lm'
    """
'''

DESCRIBED = '''def add_elements(arr, k):
    """Sum the small elements.
    Example 1:
        Input: arr = [111, 21, 3], k = 2
        Output: 21 # only 21 has at most two digits
    Example 2:
        Input:
            arr : [1, 2]
            k : 1
        Output: 1
    For arr = [5, 6], k = 2, the sum is 11 the output should be 11
    """
'''

WRAPPED_AND_WORKED = '''def half(x):
    """Half of x.
    >>> round(half(3), 1) # a note = 1
    1.5
    """


def double_sum(xs):
    """Twice the sum.
    double_sum([1, 2]) == 2 + 4 = 6
    double_sum([0]) == 0
    """
'''


def test_doctest_comparisons_give_the_call_and_the_value() -> None:
    assert docstring_examples(DOCTEST_COMPARISONS) == [("count([])", "0"), ("count([1, 2])", "2")]


def test_call_lines_in_every_separator_and_prose_is_dropped() -> None:
    assert docstring_examples(CALL_LINES) == [
        ("encrypt('hi')", "'lm'"),
        ("encrypt('gf')", "'kj'"),
        ("encrypt('et')", "'ix'"),
        ("encrypt('ab')", "'ef'"),
    ]  # another function's line and an unquoted argument are not examples


def test_described_inputs_become_keyword_calls_of_the_functions_parameters() -> None:
    assert docstring_examples(DESCRIBED) == [
        ("add_elements(arr=[5, 6], k=2)", "11"),
        ("add_elements(arr=[111, 21, 3], k=2)", "21"),
        ("add_elements(arr=[1, 2], k=1)", "1"),
    ]


def test_a_wrapped_call_and_a_worked_sum_keep_the_value_only() -> None:
    assert docstring_examples(WRAPPED_AND_WORKED) == [
        ("double_sum([1, 2])", "6"),
        ("double_sum([0])", "0"),
    ]
    assert docstring_examples(WRAPPED_AND_WORKED.split("\n\n\n")[0]) == [
        ("round(half(3), 1)", "1.5")
    ]


def test_described_examples_are_run_in_the_sandbox() -> None:
    right = "def add_elements(arr, k):\n    return sum(x for x in arr[:k] if abs(x) < 100)\n"
    wrong = "def add_elements(arr, k):\n    return sum(arr[:k])\n"
    results = check_all([(DESCRIBED, right), (DESCRIBED, wrong)])
    assert results[(DESCRIBED, right)].passed
    assert not results[(DESCRIBED, wrong)].passed
