"""The workflow language: the paper's format parses; each kind of malformed workflow is a typed
error naming the step and the field; random garbage never crashes the parser."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consortium.coord.conductor.workflow import (
    WorkflowAccessError,
    WorkflowError,
    WorkflowModelError,
    WorkflowShapeError,
    WorkflowSubtaskError,
    WorkflowSyntaxError,
    build,
    parse_workflow,
)

ROSTER = ["alpha", "beta", "gamma"]

PAPER = """<think>The question needs two independent attempts and a judge. model_id = [9]
is only a thought and must be ignored.</think>
model_id = [0, 2, 1]
subtasks = ["Solve it.", "Solve it another way.", "Compare the two and answer."]
access_list = [[], [], "all"]
"""


def test_paper_format_parses_after_think_block() -> None:
    workflow = parse_workflow(PAPER, ROSTER)
    assert [s.model for s in workflow.steps] == ["alpha", "gamma", "beta"]
    assert [s.visible for s in workflow.steps] == [(), (), (0, 1)]
    assert workflow.steps[2].subtask == "Compare the two and answer."
    assert not any(s.recursive for s in workflow.steps)


def test_variants_names_quoted_keys_and_all_in_a_list() -> None:
    text = (
        '```python\n"model_id": ["beta", 0]\n"subtasks": [\'a\', "b [with] brackets"]\n'
        '"access_list": [[], ["all"]]\n```'
    )
    workflow = parse_workflow(text, ROSTER)
    assert [s.model for s in workflow.steps] == ["beta", "alpha"]
    assert workflow.steps[1].subtask == "b [with] brackets"
    assert workflow.steps[1].access == "all"


def test_round_trip_through_text() -> None:
    workflow = build(
        ["alpha", "beta", "gamma", "alpha"], ["a", "b", "c", "d"], [(), (0,), (), (1, 2)]
    )
    assert parse_workflow(workflow.to_text(ROSTER), ROSTER) == workflow
    by_name = workflow.to_text(ROSTER, by_name=True)
    assert by_name.startswith("model_id = ['alpha', 'beta', 'gamma', 'alpha']")
    assert parse_workflow(by_name, list(reversed(ROSTER))) == workflow  # no roster order


def test_critical_path() -> None:
    workflow = build(["alpha"] * 4, ["a", "b", "c", "d"], [(), (), (0,), "all"])
    # 0 and 1 in parallel, 2 after 0, 3 after everything: 1 + 1 (2 after 0) + 1 = 3
    assert workflow.critical_path([1.0, 2.5, 1.0, 1.0]) == pytest.approx(3.5)


def lists(model_id: str, subtasks: str, access: str) -> str:
    return f"model_id = {model_id}\nsubtasks = {subtasks}\naccess_list = {access}"


@pytest.mark.parametrize(
    ("text", "error", "step", "field", "words"),
    [
        ("no lists at all", WorkflowSyntaxError, None, "model_id", "no `model_id"),
        (lists("[0, 1", '["a"]', "[[]]"), WorkflowSyntaxError, None, "model_id", "not closed"),
        (
            lists("[__import__('os').system('touch /tmp/pwned')]", '["a"]', "[[]]"),
            WorkflowSyntaxError,
            None,
            "model_id",
            "not a Python literal",
        ),
        (lists("[0, 1]", '["a"]', "[[], []]"), WorkflowShapeError, None, None, "differ in length"),
        (lists("[]", "[]", "[]"), WorkflowShapeError, None, None, "no steps"),
        (
            lists("[0, 0, 0, 0, 0, 0]", str(["a"] * 6), str([[]] * 6)),
            WorkflowShapeError,
            None,
            None,
            "at most 5",
        ),
        (lists("[0, 7]", '["a", "b"]', "[[], []]"), WorkflowModelError, 1, "model_id", "range"),
        (lists("[0, 3]", '["a", "b"]', "[[], []]"), WorkflowModelError, 1, "model_id", "range"),
        (lists("[True]", '["a"]', "[[]]"), WorkflowModelError, 0, "model_id", "not a model id"),
        (lists("['delta']", '["a"]', "[[]]"), WorkflowModelError, 0, "model_id", "not a worker"),
        (lists("[0.5]", '["a"]', "[[]]"), WorkflowModelError, 0, "model_id", "float"),
        (lists("[0]", '["  "]', "[[]]"), WorkflowSubtaskError, 0, "subtasks", "non-empty"),
        (lists("[0]", "[3]", "[[]]"), WorkflowSubtaskError, 0, "subtasks", "non-empty"),
        (
            lists("[0, 1]", '["a", "b"]', "[[], [1]]"),
            WorkflowAccessError,
            1,
            "access_list",
            "itself",
        ),
        (
            lists("[0, 1]", '["a", "b"]', "[[1], []]"),
            WorkflowAccessError,
            0,
            "access_list",
            "comes later",
        ),
        (lists("[0]", '["a"]', "[[-1]]"), WorkflowAccessError, 0, "access_list", "negative"),
        (lists("[0]", '["a"]', "['some']"), WorkflowAccessError, 0, "access_list", "'some'"),
        (
            lists("[0, 1]", '["a", "b"]', "[[], ['0']]"),
            WorkflowAccessError,
            1,
            "access_list",
            "'0'",
        ),
        (lists("[0]", '["a"]', "[3]"), WorkflowAccessError, 0, "access_list", "int"),
    ],
)
def test_each_malformed_kind_is_a_typed_error_naming_step_and_field(
    text: str, error: type[WorkflowError], step: int | None, field: str | None, words: str
) -> None:
    with pytest.raises(error) as raised:
        parse_workflow(text, ROSTER)
    assert raised.value.step == step
    assert raised.value.field == field
    assert words in str(raised.value)
    if step is not None:
        assert f"step {step}" in str(raised.value)


def test_recursion_adds_the_conductor_as_the_last_model() -> None:
    text = lists("[0, 3]", '["a", "b"]', "[[], 'all']")
    with pytest.raises(WorkflowModelError, match="out of range"):
        parse_workflow(text, ROSTER)
    workflow = parse_workflow(text, ROSTER, conductor="boss")
    assert workflow.steps[1].model == "boss" and workflow.steps[1].recursive
    assert (
        parse_workflow(lists("['boss']", '["a"]', "[[]]"), ROSTER, conductor="boss")
        .steps[0]
        .recursive
    )
    with pytest.raises(WorkflowModelError, match="recursion is off"):
        parse_workflow(lists("['boss']", '["a"]', "[[]]"), ROSTER)


def test_empty_lists_only_where_allowed() -> None:
    assert len(parse_workflow(lists("[]", "[]", "[]"), ROSTER, allow_empty=True)) == 0


def test_a_huge_unclosed_list_is_refused_without_scanning_forever() -> None:
    with pytest.raises(WorkflowSyntaxError):
        parse_workflow("model_id = [" + "[" * 300_000, ROSTER)


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(WorkflowError):
        parse_workflow(lists(deep, '["a"]', "[[]]"), ROSTER)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_random_text_never_crashes(text: str) -> None:
    with contextlib.suppress(WorkflowError):
        parse_workflow(text, ROSTER)


literals = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 8) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(literals, max_size=7),
    st.lists(literals, max_size=7),
    st.lists(literals, max_size=7),
    st.text(max_size=30),
)
def test_random_literal_lists_never_crash(
    model_id: list[object], subtasks: list[object], access: list[object], noise: str
) -> None:
    text = f"{noise}\nmodel_id = {model_id!r}\nsubtasks = {subtasks!r}\naccess_list = {access!r}"
    try:
        workflow = parse_workflow(text, ROSTER, conductor="boss")
    except WorkflowError:
        return
    # Whatever parsed is runnable: known models, non-empty subtasks, only earlier steps visible.
    for step in workflow.steps:
        assert step.model in [*ROSTER, "boss"]
        assert step.subtask.strip()
        assert all(0 <= j < step.index for j in step.visible)
