"""Whether two answers say the same thing: the comparable core of an answer's text."""

from __future__ import annotations

import re

_REPLAY_TOKEN = re.compile(r"The answer is ([RW][0-9a-f]{10})")
_STATED = re.compile(r"answer is[:\s]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_EDGES = " \t\n.*$`\"'()[]"


def final_answer(text: str) -> str:
    """The replay token, else what follows the last "answer is", else the whole text; stripped of
    markup and case so "(B)." and "b" compare equal."""
    token = _REPLAY_TOKEN.findall(text)
    if token:
        return str(token[-1])
    stated = _STATED.findall(text)
    core = str(stated[-1]) if stated else text
    return " ".join(core.strip(_EDGES).split()).lower()


def agree(first: str, second: str) -> bool:
    return final_answer(first) == final_answer(second)
