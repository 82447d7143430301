"""Choice letters a data set declares (`records import-file --letters`): checked once at import
against every question's options, graded with, and stored in the manifest, from where every
reader of the folder (`records:` tasks for eval, ask and train, their answer-aware readers) takes
them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport
from consortium.tasks.choice import LETTERS, read_options

EXAMPLE = "ABCDEFGHIJ"


def checked_letters(text: str) -> str:
    """The declared letters as given: capitals A–Z, each once, two or more; one line otherwise.
    Lower case is refused rather than folded: the letters are stored and shown as declared."""
    given = f"letters {text!r}"
    hint = f"give each option's capital letter once, e.g. --letters {EXAMPLE}"
    if len(text) < 2:
        raise RecordsError(f"{given}: a choice needs two or more letters ({hint})")
    for letter in text:
        if letter not in LETTERS:
            what = "a lower-case letter" if letter.islower() else "not a letter A–Z"
            raise RecordsError(f"{given}: {letter!r} is {what} ({hint})")
        if text.count(letter) > 1:
            raise RecordsError(f"{given}: {letter!r} is given {text.count(letter)} times ({hint})")
    return text


def declare_letters(imported: SourceImport, letters: str) -> SourceImport:
    """Every output graded with `letters`; one line naming the first question whose options
    (read from the question, or given by the source) have a letter `letters` lacks."""
    outputs = []
    read: dict[str, str] = {}
    for output in imported.outputs:
        if output.question not in read:
            read[output.question] = "".join(read_options(output.question))
        offered = read[output.question] + str(output.task.get("letters") or "")
        missing = "".join(dict.fromkeys(letter for letter in offered if letter not in letters))
        if missing:
            name = Path(imported.files[0].path).name if imported.files else "the source"
            raise RecordsError(
                f"{name}: question {output.question_id} offers option(s) {', '.join(missing)}, "
                f"which the declared letters {letters} lack (declare every option's letter)"
            )
        outputs.append(replace(output, task={**output.task, "letters": letters}))
    return replace(imported, outputs=outputs)
