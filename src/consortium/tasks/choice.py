"""Multiple choice: the options a question offers, and the letter an answer chose.

The letters a question offers come from the question itself, unless a data set declares them:
its last lettered block of options — lines `A. …`, `(A) …`, `A) …`, `A: …`, `[A] …` (the first
may follow a label, `Options: A. …`) or inline `(A) … (B) …`, `A) … B) …`, `A. … B. …`. A
lettered list earlier in the question (a few-shot example's options, statements the stem quotes)
is not the options. A question whose options cannot be read accepts any letter A–J: an answer is
never dropped because its letter lies past D. An answer that states an option's text instead of
its letter is matched to that option's letter."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from consortium.tasks.base import Grade, Task

ALL_LETTERS = "ABCDEFGHIJ"
"""The letters a question whose options cannot be read accepts."""
LETTERS = string.ascii_uppercase
"""The letters an option may have (a data set may declare letters past J)."""

_LINE_MARK = re.compile(
    r"^[ \t]*(?:[A-Z][A-Za-z ]{0,24}:[ \t]*)?"
    r"(?:\((?P<paren>[A-Z])\)|\[(?P<bracket>[A-Z])\]|(?P<bare>[A-Z])(?P<after>[.):]))[ \t]+(?=\S)",
    re.M,
)
"""An option at a line's start, perhaps after a label: `A. x`, `(A) x`, `Options: A) x`."""
_INLINE_MARK = re.compile(
    r"\((?P<paren>[A-Z])\)[ \t]*(?=\S)|(?<!\S)(?P<bare>[A-Z])(?P<after>\)[ \t]*|\.[ \t]+)(?=\S)"
)
"""An option inside a line: `(A) x`, or after a space `A) x`, `A)x`, `A. x`."""

_STATED = [
    # "\boxed{D}", "\boxed{C.2}", "\boxed{\text{(B)}}": a boxed letter wins over any other
    re.compile(r"\\boxed\{\s*(?:\\(?:text|textbf|mathrm|mathbf)\{)?\s*\(?([A-Z])(?![A-Za-z])"),
    # "The answer is (B)", "answer: B", "Final answer: **B**", "correct option is B"
    re.compile(
        r"(?:answer|option|choice)\s*(?:is|:|=)?\s*[:\s]*[\*\(\[]*([A-Z])\b[\)\]\*]*", re.IGNORECASE
    ),
    re.compile(r"\*\*\(?([A-Z])\)?[\.\):]?\*\*"),
]
_LEADING = re.compile(r"^\s*[\(\[]?([A-Z])(?:[\)\]\.:]|\s*$|\s)")
_ALONE = re.compile(r"(?<![A-Za-z])\(?([A-Z])\)(?![A-Za-z])|(?<![A-Za-z'])([A-Z])(?![A-Za-z'])")
_WORD_AFTER = re.compile(r"\s+([a-z]+)")
_LETTER_VERBS = frozenset(
    {"is", "was", "seems", "looks", "appears", "matches", "fits", "because", "since", "as"}
    | {"and", "or", "would", "should", "must"}
)
"""Words after a capital 'A' that make it a letter ('A is right'), not the article ('A cat')."""
_PUNCTUATION = re.compile(r"[^\w\s]")
_STATED_TEXT = re.compile(
    r"(?:answer|option|choice)\s*(?:\([^()\n]*\)\s*)?(?:is|:|=)\s*[:\s]*(.+)$",
    re.IGNORECASE | re.MULTILINE,
)
"""'the answer is …', 'answer: …', and 'the answer (yes or no) is …' (text-davinci-003's
few-shot form on StrategyQA, where the words in brackets are no answer)."""


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


@dataclass(frozen=True, slots=True)
class _Mark:
    """Where an option's letter stands in a question: its letter, its shape (`(`, `[`, `.`,
    `)` or `:`), where the mark starts and where the option's text starts."""

    letter: str
    shape: str
    start: int
    text_start: int


@dataclass(frozen=True, slots=True)
class _Block:
    options: dict[str, str]
    start: int
    end: int


def _marks(pattern: re.Pattern[str], question: str) -> Iterator[_Mark]:
    for match in pattern.finditer(question):
        found = match.groupdict()
        letter = found.get("paren") or found.get("bracket") or found["bare"]
        shape = "(" if found.get("paren") else "[" if found.get("bracket") else found["after"][0]
        yield _Mark(letter, shape, match.start(), match.end())


def _runs(marks: Iterator[_Mark]) -> list[list[_Mark]]:
    """Runs A, B, C … of marks of one shape, in order. An A starts a run; a letter that goes
    back or repeats ends its shape's run (`(A)…(E)` quoted in a stem, then options `B.`…`J.`
    under `Options: A. …` never join into one run)."""
    runs: list[list[_Mark]] = []
    open_runs: dict[str, list[_Mark]] = {}
    for mark in marks:
        run = open_runs.get(mark.shape)
        if mark.letter == "A":
            open_runs[mark.shape] = [mark]
            runs.append(open_runs[mark.shape])
        elif run is not None and len(run) < len(LETTERS) and mark.letter == LETTERS[len(run)]:
            run.append(mark)
        elif run is not None and mark.letter <= run[-1].letter:
            del open_runs[mark.shape]
    return [run for run in runs if len(run) >= 2]


def _block(run: list[_Mark], question: str) -> _Block | None:
    """A run's options, each text up to the next option or its line's end; None when an option
    has no text ("answer (A), (B) or (C)" names letters, it lists no options)."""
    options: dict[str, str] = {}
    end = 0
    for mark, following in zip(run, [*run[1:], None], strict=True):
        end = _line_end(question, mark.text_start)
        if following is not None:
            end = min(end, following.start)
        text = question[mark.text_start : end].strip()
        if not any(character.isalnum() for character in text):
            return None
        options[mark.letter] = text
    return _Block(options, run[0].start, end)


def read_options(question: str) -> dict[str, str]:
    """Letter -> option text, from the question's last block of two or more options A, B, …:
    the block that ends last, the longest of those (a block inside the last option's text,
    "J. all of (A), (B) and (C)", is not the options). Empty if none."""
    runs = _runs(_marks(_LINE_MARK, question)) + _runs(_marks(_INLINE_MARK, question))
    blocks = [block for run in runs if (block := _block(run, question)) is not None]
    if not blocks:
        return {}
    return max(blocks, key=lambda block: (block.end, -block.start)).options


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
