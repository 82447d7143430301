"""Multiple choice beyond A–D: the letters a question offers are read from the question, an answer
may name its option's text, and an import with no declared letters grades every row right."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from consortium.records.build import Part, build_dataset
from consortium.records.grading import grade_text
from consortium.records.importers.base import SourceImport, SourceOutput
from consortium.records.schema import SourceFile
from consortium.tasks.base import Task
from consortium.tasks.choice import ChoiceGrader, Choices, extract_choice, read_options

TEN = [
    "mercury", "venus", "earth", "mars", "jupiter", "saturn", "uranus", "neptune", "pluto", "ceres",
]  # fmt: skip


def _lines(texts: list[str], style: str) -> str:
    letters = "ABCDEFGHIJ"
    shapes = {"dot": "{}. {}", "paren": "({}) {}", "half": "{}) {}", "colon": "{}: {}"}
    pairs = list(zip(letters, texts, strict=False))
    if style == "inline":
        return "Answer Choices: " + " ".join(f"({letter}) {text}" for letter, text in pairs)
    return "\n".join(shapes[style].format(letter, text) for letter, text in pairs)


@pytest.mark.parametrize("style", ["dot", "paren", "half", "colon", "inline"])
@pytest.mark.parametrize("count", [2, 4, 5, 10])
def test_options_are_read_from_the_question_in_every_shape(style: str, count: int) -> None:
    question = f"Which body is the one we want?\n{_lines(TEN[:count], style)}\nAnswer:"
    options = read_options(question)
    assert "".join(options) == "ABCDEFGHIJ"[:count]
    assert list(options.values()) == TEN[:count]


def test_the_last_run_of_options_is_the_question_s_own() -> None:
    """A few-shot prompt lists its examples' options first; their letters must not count."""
    prompt = (
        "Q: 1+1?\nA) 2\nB) 3\nAnswer: A\n\n"
        "Q: Pick the planet.\nA) sun\nB) moon\nC) mars\nD) halley\nE) sirius\nAnswer:"
    )
    assert "".join(read_options(prompt)) == "ABCDE"
    assert read_options("What is 2 + 2? Say it in words.") == {}


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("\\boxed{E}", "E"),
        ("The answer is (H).", "H"),
        ("**J**", "J"),
        ("After weighing them all, the answer is I.", "I"),
        ("I think the answer is G", "G"),
        ("I believe it has to be F.", "F"),
        ("A careful reading gives (E)", "E"),
        ("Answer: j", "J"),
        ("The answer is a bit unclear, but I lean to D", "D"),
        ("I is the only one that fits.", "I"),
        ("It is either E or F.", None),
        ("I would go with A here.", "A"),
        ("So A it is.", "A"),
        ("Answer: I think it is B", "B"),
    ],
)
def test_letters_past_d_read_right(text: str, letter: str | None) -> None:
    assert extract_choice(text, Choices("ABCDEFGHIJ")) == letter


def test_an_answer_given_as_an_option_text_is_matched_to_its_letter() -> None:
    choices = Choices.of(f"Which planet has rings?\n{_lines(TEN, 'dot')}")
    assert extract_choice("Saturn", choices) == "F"
    assert extract_choice("The answer is: Neptune.", choices) == "H"
    assert extract_choice("Of the ten, only Saturn has bright rings.", choices) == "F"
    # two options named: no single choice can be read
    assert extract_choice("Saturn and Jupiter both have rings.", choices) is None
    # a letter stated wins over an option's text
    assert extract_choice("Not Saturn: the answer is (C)", choices) == "C"


def test_an_article_opening_the_answer_is_tried_as_an_option_text_first() -> None:
    choices = Choices.of("Which is orange?\nA. Apple\nB. Carrot")
    assert extract_choice("A carrot", choices) == "B"
    assert extract_choice("A first", Choices.of("Q?\nA) first-aid kit\nB) water")) == "A"


def test_the_options_that_end_last_win_over_a_dialogue_and_bare_inline_ones_read() -> None:
    dialogue = "A: Where to?\nB: The market.\nWhat will B buy? (A) bread (B) nails (C) a car"
    assert read_options(dialogue) == {"A": "bread", "B": "nails", "C": "a car"}
    assert read_options("Pick one: A) red B) blue C) green") == {
        "A": "red",
        "B": "blue",
        "C": "green",
    }


def test_a_reference_given_as_text_or_letter_both_grade() -> None:
    question = f"Which planet has rings?\n{_lines(TEN[:5], 'paren')}"
    assert grade_text("choice", "E", "\\boxed{E}", question=question).correct
    assert grade_text("choice", "jupiter", "The answer is (E)", question=question).correct
    assert not grade_text("choice", "jupiter", "The answer is (D)", question=question).correct


def test_declared_letters_win_over_the_question() -> None:
    question = f"Pick one.\n{_lines(TEN[:5], 'dot')}"
    assert grade_text("choice", "B", "E", question=question).answer == "E"
    assert grade_text("choice", "B", "E", question=question, letters="ABCD").answer is None


def test_the_live_grader_reads_the_task_s_options() -> None:
    task = Task("t", f"Pick one.\n{_lines(TEN, 'half')}", "mc", "test", "J", {})
    assert ChoiceGrader().grade(task, "**J**").correct
    assert not ChoiceGrader().grade(task, "**I**").correct


def _fixture_set(count: int, seed: int) -> tuple[list[SourceOutput], dict[tuple[str, str], bool]]:
    """Questions with `count` options, three models answering in varied styles; the gold verdict of
    each row is known by construction."""
    rng = random.Random(seed)
    styles = ["dot", "paren", "half", "inline"]
    answer_shapes = [
        "The answer is ({}).",
        "\\boxed{{{}}}",
        "**{}**",
        "Answer: {}",
        "After checking each option, I pick {}.",
        "{}",
    ]
    outputs: list[SourceOutput] = []
    gold: dict[tuple[str, str], bool] = {}
    for q in range(30):
        texts = rng.sample(TEN, count) if count <= len(TEN) else TEN
        question = f"Question {q}: which one?\n{_lines(texts, rng.choice(styles))}"
        letters = "ABCDEFGHIJ"[:count]
        reference = rng.choice(letters[-3:])  # the last letters: past D when count > 4
        for model in ("m1", "m2", "m3"):
            chosen = reference if rng.random() < 0.6 else rng.choice(letters)
            if rng.random() < 0.2:
                response = f"I would say {texts[letters.index(chosen)]}"
            else:
                response = rng.choice(answer_shapes).format(chosen)
            outputs.append(SourceOutput(str(q), question, reference, model, 0, response))
            gold[(str(q), model)] = chosen == reference
    return outputs, gold


@pytest.mark.parametrize("count", [5, 10])
def test_an_import_with_no_declaration_grades_every_row_right(count: int) -> None:
    outputs, gold = _fixture_set(count, seed=count)
    files = [SourceFile(path="fixture.jsonl", model=m) for m in ("m1", "m2", "m3")]
    part = Part(SourceImport(outputs, files), "fixture", "0", Path("."))
    _, rows = build_dataset(
        f"mc{count}", "choice", [part], licence="test", created_by="test", workers=1
    )
    verdicts = {(row.question_id, row.model): row.correct for row in rows}
    assert verdicts == gold
    assert any(row.answer in "EFGHIJ" and row.correct for row in rows)
