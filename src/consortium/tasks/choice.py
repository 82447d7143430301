"""Multiple choice: the options a question offers, and the letter an answer chose.

The letters a question offers come from the question itself (its option lines `A. …`, `(A) …`,
`A) …`, `A: …` up to J, or inline `(A) … (B) …`), unless a data set declares them. A question
whose options cannot be read accepts any letter A–J: an answer is never dropped because its
letter lies past D. An answer that states an option's text instead of its letter is matched to
that option's letter."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from consortium.tasks.base import Grade, Task

ALL_LETTERS = "ABCDEFGHIJ"

_OPTION_LINE = re.compile(r"^\s*(?:\(([A-J])\)|\[([A-J])\]|([A-J])[\.\):])\s+(\S.*?)\s*$", re.M)
_OPTION_INLINE = re.compile(r"\(([A-J])\)\s*|(?:(?<=\s)|^)([A-J])\)\s+")
"""Inline options: `(A) x (B) y`, or `A) x B) y` (a bare letter and parenthesis after a space)."""

_STATED = [
    # "The answer is (B)", "answer: B", "Final answer: **B**", "correct option is B"
    re.compile(
        r"(?:answer|option|choice)\s*(?:is|:|=)?\s*[:\s]*[\*\(\[]*([A-J])\b[\)\]\*]*", re.IGNORECASE
    ),
    re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*\(?([A-J])\)?\s*\}?\s*\}"),
    re.compile(r"\*\*\(?([A-J])\)?[\.\):]?\*\*"),
]
_LEADING = re.compile(r"^\s*[\(\[]?([A-J])(?:[\)\]\.:]|\s*$|\s)")
_ALONE = re.compile(r"(?<![A-Za-z])\(?([A-J])\)(?![A-Za-z])|(?<![A-Za-z'])([A-J])(?![A-Za-z'])")
_WORD_AFTER = re.compile(r"\s+([a-z]+)")
_LETTER_VERBS = frozenset(
    {"is", "was", "seems", "looks", "appears", "matches", "fits", "because", "since", "as"}
    | {"and", "or", "would", "should", "must"}
)
"""Words after a capital 'A' that make it a letter ('A is right'), not the article ('A cat')."""
_PUNCTUATION = re.compile(r"[^\w\s]")
_STATED_TEXT = re.compile(
    r"(?:answer|option|choice)\s*(?:is|:|=)\s*[:\s]*(.+)$", re.IGNORECASE | re.MULTILINE
)


def _plain(text: str) -> str:
    """Case, markup and punctuation at the edges folded away, spaces collapsed."""
    words = re.sub(r"[\*_`\"“”'‘’]", "", text).casefold().split()
    return " ".join(words).strip(" .,:;!?()[]")


@dataclass(frozen=True, slots=True)
class Choices:
    """The letters a question accepts and, where the question lists them, each option's text."""

    letters: str = ALL_LETTERS
    texts: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, question: str, declared: str | None = None) -> Choices:
        """Declared letters win; else the question's own options; else any letter A–J."""
        options = read_options(question)
        if declared:
            letters = declared.strip().upper()
            return cls(letters, {k: v for k, v in options.items() if k in letters})
        if options:
            return cls("".join(options), options)
        return cls()

    def letter_of(self, reference: str) -> str:
        """A gold answer as a letter: a letter stays, an option's text becomes its letter."""
        stated = reference.strip().strip("()[]. ").upper()
        if stated in self.letters and len(stated) == 1:
            return stated
        plain = _plain(reference)
        for letter, text in self.texts.items():
            if _plain(text) == plain:
                return letter
        return stated


Found = tuple[str, str, int]
"""An option: its letter, its text, where it ends in the question."""


def _runs(found: list[Found]) -> list[tuple[dict[str, str], int]]:
    """Consecutive runs A, B, C … of two or more among the options found, in order, each with
    where its last option ends."""
    runs: list[tuple[dict[str, str], int]] = []
    for letter, text, end in found:
        if letter == "A":
            runs.append(({"A": text}, end))
        elif runs and letter == ALL_LETTERS[len(runs[-1][0])]:
            runs[-1][0][letter] = text
            runs[-1] = (runs[-1][0], end)
    return [run for run in runs if len(run[0]) >= 2]


def read_options(question: str) -> dict[str, str]:
    """Letter -> option text as the question lists them, on lines or inline: the run A, B, … of
    two or more that ends last (a few-shot prompt lists its examples' options before the
    question's own; a dialogue's `A:` / `B:` lines come before the options). Empty if none."""
    lines = [
        (m.group(1) or m.group(2) or m.group(3), m.group(4), m.end())
        for m in _OPTION_LINE.finditer(question)
    ]
    marks = list(_OPTION_INLINE.finditer(question))
    inline = []
    for index, mark in enumerate(marks):
        last = index + 1 == len(marks)
        end = _line_end(question, mark.end()) if last else marks[index + 1].start()
        inline.append((mark.group(1) or mark.group(2), question[mark.end() : end].strip(), end))
    runs = _runs(lines) + _runs(inline)
    return max(runs, key=lambda run: run[1])[0] if runs else {}


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _is_word(text: str, letter: str, end: int) -> bool:
    """Whether the letter ending at `end` is the article 'a' or the pronoun 'I' (followed by a
    lower-case word), not a choice: 'a bit', 'I think', and 'A cat' opening a sentence; not
    'I is', 'A is', nor a capital A inside a sentence ('I would go with A here')."""
    following = _WORD_AFTER.match(text, end)
    if following is None or letter.upper() not in "AI":
        return False
    word = following.group(1)
    if letter.islower():
        return True
    if letter == "I":
        return word != "is"
    before = text[: end - 1].rstrip()
    opens_sentence = not before or before[-1] in ".!?:\n" or before.endswith(("**", "*"))
    return opens_sentence and word not in _LETTER_VERBS


def _by_letter(text: str, allowed: str) -> tuple[str | None, bool]:
    """The letter read, or None and whether the answer opens with 'A <word>' (option A cut
    short, or the article: the caller tries the options' texts first)."""
    for pattern in _STATED:
        found = [
            match.group(1).upper()
            for match in pattern.finditer(text)
            if match.group(1).upper() in allowed
            and not (
                (match.group(1).islower() or match.group(1) == "I")
                and _is_word(text, match.group(1), match.end(1))
            )
        ]
        if found:
            return found[-1], False
    leading = _LEADING.match(text)
    article = False
    if leading and leading.group(1).upper() in allowed:
        letter = leading.group(1).upper()
        if not _is_word(text, letter, leading.end(1)):
            return letter, False
        article = letter == "A"
    alone = {
        (match.group(1) or match.group(2))
        for match in _ALONE.finditer(text)
        if (match.group(1) or match.group(2)) in allowed
        and not (match.group(2) and _is_word(text, match.group(2), match.end(2)))
    }
    if len(alone) == 1:
        return alone.pop(), False
    return None, article and not alone


def _spaced(text: str) -> str:
    """Words only, padded with spaces, for whole-word containment."""
    return f" {_plain(_PUNCTUATION.sub(' ', text))} "


def _by_text(text: str, options: Mapping[str, str]) -> str | None:
    """The option whose text the answer states: after 'answer is', as the whole answer, or as
    the only option text (of three or more characters, not a bare number) it mentions."""
    plain_options = {letter: _plain(option) for letter, option in options.items()}
    stated = [_plain(m) for m in _STATED_TEXT.findall(text)]
    for candidate in [*reversed(stated), _plain(text)]:
        for letter, option in plain_options.items():
            if option and candidate == option:
                return letter
    whole = _spaced(text)
    mentioned = {
        letter
        for letter, option in plain_options.items()
        if len(option) >= 3 and not option.replace(".", "").isdigit() and _spaced(option) in whole
    }
    return mentioned.pop() if len(mentioned) == 1 else None


def extract_choice(text: str, choices: Choices | str | None = None) -> str | None:
    """The chosen letter, or None. Stated answers win over a leading letter over a lone one;
    an answer with no letter is matched by an option's text. `choices`: the question's
    `Choices`, or the allowed letters, or None for any letter A–J."""
    if not isinstance(choices, Choices):
        choices = Choices(choices.upper()) if choices else Choices()
    chosen, opens_with_a = _by_letter(text, choices.letters)
    if chosen is None and choices.texts:
        chosen = _by_text(text, choices.texts)
    if chosen is None and opens_with_a:
        chosen = "A"  # 'A first' with no option text matched: option A, cut short
    return chosen


class ChoiceGrader:
    def grade(self, task: Task, answer: str) -> Grade:
        choices = Choices.of(task.question, task.meta.get("letters"))
        chosen = extract_choice(answer, choices)
        if chosen is None:
            return Grade(False, 0.0, "no choice found")
        correct = chosen == choices.letter_of(str(task.reference))
        return Grade(correct, float(correct), f"chose {chosen}")
