"""The `--tasks` forms the task parser accepts: each kind's name and its options, written once for
the help that lists them and for the loaders that check them, so that the two cannot drift
apart."""

from __future__ import annotations

import re
from dataclasses import dataclass

from consortium.tasks.loaders import FORMATS


@dataclass(frozen=True)
class TaskForm:
    names: tuple[str, ...]
    options: str
    """What follows the name: its key=value options, the optional ones in brackets (a space
    between them, where the help may break its line)."""

    @property
    def keys(self) -> set[str]:
        """The option names a spec of this form may give."""
        return set(re.findall(r"(\w+)=", self.options))

    def usage(self) -> str:
        if len(self.names) == 1:
            return self.names[0] + self.options
        return f"FORMAT{self.options} (FORMAT: {', '.join(self.names)})"


RECORDS = TaskForm(("records",), ":path=DIR [:split=train|test|all] [:limit=N] [:seed=N]")
REPLAY = TaskForm(
    ("replay",), " [:data=DIR] [:source=S] [:datasets=a,b] [:split=S] [:limit=N] [:seed=N]"
)
ARITHMETIC = TaskForm(("arithmetic",), " [:n=N] [:seed=N]")
BENCHMARK = TaskForm(
    tuple(FORMATS), ":path=FILE|hf=DATASET [:config=C] [:split=S] [:limit=N] [:seed=N]"
)
TASK_FORMS = (RECORDS, REPLAY, ARITHMETIC, BENCHMARK)

TASK_SPECS = "; ".join(form.usage() for form in TASK_FORMS)
"""Every form, as the help lists them."""


def known_names() -> list[str]:
    return [name for form in TASK_FORMS for name in form.names]
