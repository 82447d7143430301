"""Choice reading on questions shaped like real ones (a stem quoting its own "(A) … (E)" list above
options A–J, boxed letters among other letters), and letters declared at import
(`records import-file --letters`, `letters` in --config) reaching every reader of the folder."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from consortium.coord.answers.reading import answer_reader
from consortium.records import load_records
from consortium.records.store import read_manifest
from consortium.records.tasks import RecordsGrader, records_tasks
from consortium.tasks.choice import Choices, extract_choice, read_options
from tests.test_cli import cli, one_line_error

LETTERS = "ABCDEFGHIJ"
STATEMENTS = [
    "Water boils at 100 C at sea level.",
    "The Moon is a planet.",
    "Iron rusts in damp air.",
    "Sound travels through a vacuum.",
    "Plants make sugar from light.",
]
OPTIONS = [
    "(A) only",
    "(B) only",
    "(A) and (C)",
    "(B) and (D)",
    "(A), (C) and (E)",
    "(C) and (E)",
    "(A) and (E)",
    "(A), (B) and (C)",
    "all five",
    "none of them",
]


def _stem(shape: str) -> str:
    quoted = [f"({letter}) {text}" for letter, text in zip("ABCDE", STATEMENTS, strict=True)]
    if shape == "lines":
        return "Consider these statements:\n" + "\n".join(quoted) + "\nWhich of them are true?"
    return f"Consider these statements: {' '.join(quoted)} Which of them are true?"


def _options(shape: str) -> str:
    lines = [f"{letter}. {text}" for letter, text in zip(LETTERS, OPTIONS, strict=True)]
    if shape == "labelled":  # the first option on the label's line
        return "Options: " + "\n".join(lines)
    if shape == "inline":
        return "Options: " + " ".join(lines)
    if shape == "reminder":  # a line after the options names the stem's letters again
        return "\n".join(lines) + "\nJudge each of (A), (B), (C), (D) and (E) first."
    return "\n".join(lines)


SHAPES = [
    (stem, options)
    for stem in ("lines", "inline")
    for options in ("labelled", "inline", "reminder", "plain")
]


def statements_question(stem: str, options: str) -> str:
    return f"{_stem(stem)}\n{_options(options)}\nAnswer with the letter of the right option."


@pytest.mark.parametrize(("stem", "options"), SHAPES)
def test_the_options_are_the_last_block_not_the_stem_s_list(stem: str, options: str) -> None:
    question = statements_question(stem, options)
    assert read_options(question) == dict(zip(LETTERS, OPTIONS, strict=True))
    choices = Choices.of(question)
    for letter in "FGHIJ":
        assert extract_choice(f"So the answer is \\boxed{{{letter}}}.", choices) == letter
    # an answer that states an option's text is matched to the option, not to a statement
    assert extract_choice("The answer is: all five", choices) == "I"


def test_a_list_inside_the_last_option_is_not_the_options() -> None:
    question = "Pick one.\nA. red\nB. blue\nC. all of (A), (B) and (C) below"
    assert "".join(read_options(question)) == "ABC"


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{C.2}",
        "B fits the first statement only, so \\boxed{C.2}",
        "\\boxed{(C)}",
        "\\boxed{\\text{C}}",
        "The final pick: $\\boxed{\\textbf{C}}$",
        "answer: (C)",
        "Answer: C",
        # a boxed letter wins over letters named elsewhere
        "Option D looks tempting, and answer B was my first guess, but \\boxed{C}",
        "\\boxed{C}\n\nWhy not D? Option D ignores the second statement.",
    ],
)
def test_a_stated_letter_reads_right(text: str) -> None:
    five = "Which one?\nA. one\nB. two\nC. three\nD. four\nE. five"
    assert extract_choice(text, Choices.of(five)) == "C"


ANSWER_SHAPES = [
    "The answer is ({}).",
    "\\boxed{{{}}}",
    "B and D fit one statement each; {} fits both: \\boxed{{{}.2}}",
    "\\boxed{{({})}}",
    "answer: ({})",
    "Answer: {}",
    "Option C is tempting and answer B is close, but the statements fit {} best: \\boxed{{{}}}",
]


def _statement_rows(seed: int) -> tuple[list[dict[str, object]], dict[tuple[str, str], bool]]:
    """Three models' answers to 24 questions of every shape, gold F–J; each row's verdict is
    known by construction."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    gold: dict[tuple[str, str], bool] = {}
    for number in range(24):
        question = statements_question(*SHAPES[number % len(SHAPES)])
        reference = rng.choice("FGHIJ")
        for model in ("m1", "m2", "m3"):
            chosen = reference if rng.random() < 0.6 else rng.choice(LETTERS)
            response = rng.choice(ANSWER_SHAPES).format(chosen, chosen)
            qid = f"s{number}"
            rows.append(
                {"id": qid, "prompt": question, "gold": reference, "model": model, "out": response}
            )
            gold[(qid, model)] = chosen == reference
    return rows, gold


STATEMENT_MAP = ["--map", "id=id", "--map", "question=prompt", "--map", "reference=gold"]
STATEMENT_MAP += ["--map", "response=out", "--map", "model=model"]


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _import(source: Path, out: Path, *extra: str) -> None:
    done = cli(
        "records", "import-file", str(source), "--layout", "fields", *STATEMENT_MAP,
        "--dataset", "statements", "--kind", "choice", "--out", str(out), *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "disagree" not in done.stdout + done.stderr


@pytest.mark.parametrize("declared", [[], ["--letters", LETTERS]])
def test_an_import_grades_every_row_as_its_gold_verdict(
    tmp_path: Path, declared: list[str]
) -> None:
    rows, gold = _statement_rows(seed=51)
    out = tmp_path / "statements"
    _import(_write_jsonl(tmp_path / "statements.jsonl", rows), out, *declared)
    records = load_records(out)
    assert records.manifest.letters == (LETTERS if declared else None)
    verdicts = {(row.question_id, row.model): row.correct for row in records.rows()}
    assert verdicts == gold
    assert 0 < sum(gold.values()) < len(gold)  # right and wrong rows, all graded as such
    # a reader of the folder (eval, train and ask on `records:` tasks) grades as the import did
    tasks = {task.id: task for task in records_tasks(str(out))[0]}
    grader = RecordsGrader("choice")
    for row in records.rows():
        assert grader.grade(tasks[row.question_id], row.response or "").correct is row.correct


TWELVE = "Which of the twelve cards, lettered A to L, is the queen of hearts?"


def test_declared_letters_reach_the_grader_and_every_reader(tmp_path: Path) -> None:
    """Letters past J that no question lists: only the declared letters read them."""
    rows = [
        {"id": "q1", "prompt": TWELVE, "gold": "K", "model": "m1", "out": "\\boxed{K}"},
        {"id": "q1", "prompt": TWELVE, "gold": "K", "model": "m2", "out": "The answer is (L)."},
    ]
    source = _write_jsonl(tmp_path / "twelve.jsonl", rows)
    out = tmp_path / "twelve"
    _import(source, out, "--letters", "ABCDEFGHIJKL")
    records = load_records(out)
    assert [(r.model, r.answer, r.correct) for r in records.rows()] == [
        ("m1", "K", True),
        ("m2", "L", False),
    ]
    (task,), _, _, _ = records_tasks(str(out))
    assert task.meta["letters"] == "ABCDEFGHIJKL"
    assert RecordsGrader("choice").grade(task, "\\boxed{K}").correct
    assert answer_reader("choice")(task, "I pick \\boxed{L}") == "L"
    recipe = read_manifest(out).recipe
    assert recipe is not None and recipe.letters == "ABCDEFGHIJKL"
    again = tmp_path / "again"
    assert cli("records", "reimport", str(out), "--out", str(again)).returncode == 0
    assert (again / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()
    # without the declaration, K and L are no option of the question
    plain = tmp_path / "plain"
    done = cli(
        "records", "import-file", str(source), "--layout", "fields", *STATEMENT_MAP,
        "--dataset", "twelve", "--kind", "choice", "--out", str(plain),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r.answer for r in load_records(plain).rows()] == [None, None]
    stored = json.loads((plain / "manifest.json").read_text())
    assert "letters" not in stored and "letters" not in stored["recipe"]  # written as before


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--letters", "AABCDEFGHIJ"], "letters 'AABCDEFGHIJ': 'A' is given 2 times"),
        (["--letters", "abcdefghij"], "'a' is a lower-case letter"),
        (["--letters", "ABCD1"], "'1' is not a letter A–Z"),
        (["--letters", "A"], "a choice needs two or more letters"),
        (
            ["--letters", "ABCDE"],
            "statements.jsonl: question s0 offers option(s) F, G, H, I, J, which the declared "
            "letters ABCDE lack",
        ),
        (["--letters", LETTERS, "--kind", "number"], "--letters is for --kind choice, not number"),
        (["--map", "letters=ABCDEFGHIJ"], "field map: letters is not a field of a row"),
    ],
)
def test_bad_letters_are_one_line_and_write_nothing(
    tmp_path: Path, extra: list[str], expected: str
) -> None:
    rows, _ = _statement_rows(seed=1)
    source = _write_jsonl(tmp_path / "statements.jsonl", rows)
    out = tmp_path / "out"
    done = cli(
        "records", "import-file", str(source), "--layout", "fields", *STATEMENT_MAP,
        "--dataset", "statements", "--kind", "choice", "--out", str(out), *extra,
    )  # fmt: skip
    one_line_error(done, expected)
    assert not out.exists()


def test_letters_in_a_config_file_are_checked_against_the_options(tmp_path: Path) -> None:
    rows, gold = _statement_rows(seed=2)
    _write_jsonl(tmp_path / "statements.jsonl", rows)
    mapped = 'id = "id"\nquestion = "prompt"\nreference = "gold"\nresponse = "out"\n'
    config = tmp_path / "statements.toml"
    recipe = (
        'layout = "fields"\ndataset = "statements"\nkind = "choice"\nout = "made"\n'
        '[[files]]\npath = "statements.jsonl"\nmodel = "m"\n'
    )
    config.write_text(f'letters = "ABCDE"\n{recipe}[map]\n{mapped}model = "model"\n')
    one_line_error(
        cli("records", "import-file", "--config", str(config)),
        "question s0 offers option(s) F, G, H, I, J, which the declared letters ABCDE lack",
    )
    assert not (tmp_path / "made").exists()
    config.write_text(f'letters = "{LETTERS}"\n{recipe}[map]\n{mapped}model = "model"\n')
    done = cli("records", "import-file", "--config", str(config))
    assert done.returncode == 0, done.stderr
    records = load_records(tmp_path / "made")
    assert records.manifest.letters == LETTERS
    assert {(r.question_id, r.model): r.correct for r in records.rows()} == gold


@pytest.mark.parametrize(
    ("said", "chosen"),
    [
        ("Thus 1 is less than 5. Therefore, the answer (yes or no) is no.", "B"),
        ("So the answer (yes or no) is yes.", "A"),
        ("The answer is no.", "B"),
    ],
)
def test_a_stated_option_text_after_a_bracketed_aside_is_read(said: str, chosen: str) -> None:
    """text-davinci-003's few-shot form on StrategyQA ('the answer (yes or no) is no') was read
    as yes, the first option text it mentions: 1,310 of the recorded debate rows."""
    choices = Choices.of("Question: Is 1 more than 5?\nChoices: (A) yes (B) no.", None)
    assert extract_choice(said, choices) == chosen
