from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from consortium.coord.answers.reading import answer_reader
from consortium.core.errors import TaskSpecError
from consortium.records.grading import Verdict, grade_text
from consortium.tasks.base import Task
from consortium.tasks.choice import ChoiceGrader, extract_choice
from consortium.tasks.loaders import build_tasks, read_hf, read_rows
from consortium.tasks.math import MathGrader, extract_answer
from consortium.tasks.registry import load_task_set
from tests.helpers import benchmarks_dir

BENCHMARKS = benchmarks_dir()


def test_every_gsm8k_reference_grades_right_and_a_perturbed_one_wrong() -> None:
    tasks = build_tasks("gsm8k", read_rows(BENCHMARKS / "gsm8k/test.jsonl"))
    assert len(tasks) == 1319
    grader = MathGrader()
    for task in tasks:
        solution = task.meta["solution"]
        assert grader.grade(task, solution).correct, task.id
        off_by_one = solution.rsplit("####", 1)[0] + f"#### {int(task.reference) + 1}"
        assert not grader.grade(task, off_by_one).correct, task.id


def test_every_math500_reference_grades_right_and_a_perturbed_one_wrong() -> None:
    tasks = build_tasks("math", read_rows(BENCHMARKS / "math500/test.jsonl"))
    assert len(tasks) == 500
    grader = MathGrader()
    for task in tasks:
        assert grader.grade(task, f"Thus the result is $\\boxed{{{task.reference}}}$.").correct
        assert not grader.grade(task, f"\\boxed{{{task.reference}+1}}").correct, task.id


@pytest.mark.parametrize(
    ("reference", "answer", "correct"),
    [
        ("\\frac{1}{2}", "The answer is 0.5.", True),
        ("\\frac{1}{2}", "so we get \\boxed{\\dfrac{2}{4}}", True),
        ("2\\sqrt{2}", "\\boxed{\\sqrt{8}}", True),
        ("[0, 1)", "\\boxed{[0,1)}", True),
        ("[0, 1)", "\\boxed{[0,1]}", False),
        ("10", "The rope is \\boxed{10\\text{ cm}} long.", True),
        ("1234", "#### 1,234", True),
        ("18", "She makes 9 * 2 = 18 dollars", True),
        ("18", "She makes 18 dollars, minus 1 = 17", False),
        ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\frac{\\sqrt{3}}{2}}", True),
        ("42", "The answer is indeed 42.", True),
        ("3.5", "So the answer is about 3.5 hours", True),
        ("43", "The answer is indeed 42.", False),
    ],
)
def test_math_equivalence(reference: str, answer: str, correct: bool) -> None:
    task = Task("t", "q", "math", "test", reference)
    assert MathGrader().grade(task, answer).correct is correct


def test_extraction_order() -> None:
    assert extract_answer("first 3, then \\boxed{\\frac{a}{b}} and 7") == ("\\frac{a}{b}", "boxed")
    assert extract_answer("x\n#### 42") == ("42", "####")
    assert extract_answer("The answer is $x^2$. Done") == ("x^2", "answer is")
    # words around a stated number: the number, the last one; math stays whole
    assert extract_answer("The answer is indeed 42.") == ("42", "answer is")
    assert extract_answer("the answer is about 3.5 hours") == ("3.5", "answer is")
    assert extract_answer("The answer is 12 - 4 = 8 dollars.") == ("8", "answer is")
    assert extract_answer("The answer is 2 pi.") == ("2 pi", "answer is")
    assert extract_answer("The answer is \\sqrt{2} cm") == ("\\sqrt{2} cm", "answer is")
    assert extract_answer("no numbers here") == (None, "none")
    assert not MathGrader().grade(Task("t", "q", "math", "test", "1"), "nothing").correct


@pytest.mark.parametrize("text", ["The answer is indeed 42.", "So the answer is about 42 apples"])
def test_every_number_reader_takes_the_stated_number(text: str) -> None:
    """The import's grader, the live grader and an answer-aware policy's reader read alike."""
    task = Task("t", "q", "gsm8k", "test", "42")
    assert grade_text("number", "42", text) == Verdict("42", True)
    assert MathGrader().grade(task, text).correct
    assert answer_reader("number")(task, text) == "42"


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("The answer is (B).", "B"),
        ("Answer: C", "C"),
        ("**D**", "D"),
        ("A) because the palms are dry", "A"),
        ("B", "B"),
        ("I think it's \\boxed{C}", "C"),
        ("The correct option is d.", "D"),
        ("After ruling out A and C, the answer is B", "B"),
        ("It is either A or C.", None),
        ("I cannot tell.", None),
    ],
)
def test_choice_extraction(text: str, letter: str | None) -> None:
    assert extract_choice(text, "ABCD") == letter


def test_choice_grader_uses_the_task_letters() -> None:
    task = Task("t", "q", "mc", "test", "E", {"letters": "ABCDE"})
    assert ChoiceGrader().grade(task, "Answer: E").correct
    assert not ChoiceGrader().grade(task, "Answer: A").correct


def test_file_formats(tmp_path: Path) -> None:
    rows = [{"question": "2+2?", "answer": "x\n#### 4"}, {"question": "3+3?", "answer": "#### 6"}]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "a.json").write_text(json.dumps({"data": rows}))
    (tmp_path / "a.csv").write_text('question,answer\n2+2?,"x\n#### 4"\n3+3?,#### 6\n')
    for name in ("a.jsonl", "a.jsonl.gz", "a.json", "a.csv"):
        tasks = build_tasks("gsm8k", read_rows(tmp_path / name))
        assert [t.reference for t in tasks] == ["4", "6"], name
    (tmp_path / "bad.jsonl").write_text('{"question": 1}\n{oops\n')
    with pytest.raises(TaskSpecError, match=r"bad.jsonl:2: invalid JSON"):
        read_rows(tmp_path / "bad.jsonl")
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(TaskSpecError, match="unknown format"):
        read_rows(tmp_path / "a.txt")
    with pytest.raises(TaskSpecError, match="task file not found"):
        read_rows(tmp_path / "missing.jsonl")


def test_task_specs_for_every_benchmark() -> None:
    gsm8k = load_task_set(f"gsm8k:path={BENCHMARKS}/gsm8k/test.jsonl:limit=20:seed=1")
    assert len(gsm8k.tasks) == 20 and type(gsm8k.grader).__name__ == "MathGrader"
    mbpp = load_task_set(f"mbpp:path={BENCHMARKS}/mbpp/mbpp.jsonl:split=train")
    assert len(mbpp.tasks) == 374 and type(mbpp.grader).__name__ == "CodeGrader"
    math = load_task_set(f"math:path={BENCHMARKS}/aime24/test.jsonl")
    assert len(math.tasks) == 30
    with pytest.raises(TaskSpecError, match="exactly one of path=FILE or hf=DATASET"):
        load_task_set("gsm8k")
    with pytest.raises(TaskSpecError, match="unknown option colour"):
        load_task_set("gsm8k:path=x:colour=red")


def test_mbpp_questions_match_the_recorded_ones(replay_dir: Path) -> None:
    recorded = {
        row["question"] for row in json.loads((replay_dir / "split2_model7/mbpp.json").read_text())
    }
    tasks = build_tasks("mbpp", read_rows(BENCHMARKS / "mbpp/mbpp.jsonl"), split="test")
    assert {t.question for t in tasks} == recorded


def test_hugging_face_offline_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TaskSpecError, match="offline"):
        read_hf("openai/gsm8k", "test", "main")


def test_an_import_and_the_live_grader_give_a_program_the_same_cpu() -> None:
    """A program's verdict in a records folder and over `eval` come from one CPU limit: at 5 s
    for the import against the live grader's 10 s, gpt-3.5's answer to RouterBench's mbpp.dev.71
    (about 5 s of CPU) passed live and passed or failed the import with the machine's load."""
    from consortium.records.build import IMPORT_LIMITS
    from consortium.sandbox.session import ThreadSessions
    from consortium.tasks.code import CodeGrader

    live = CodeGrader().sandbox  # the default sandbox, as `eval`'s records grader runs it
    assert isinstance(live, ThreadSessions)
    assert live.sandbox.limits.cpu_seconds == IMPORT_LIMITS.cpu_seconds == 10
