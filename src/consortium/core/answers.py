"""The answer convention: every prompt asks a model to end with "The answer is X". Here is how an
answer's final answer is read back (to tell whether two answers agree) and how a Verifier's reply
is read as a verdict.

An answer stated as an opaque identifier (letters and digits with at least one capital and one
digit, e.g. the replay pool's tokens) is compared exactly as written; any other answer is
compared without markup and case.
"""

from __future__ import annotations

import re

ANSWER_PREFIX = "The answer is "

_STATED = re.compile(r"answer is[:\s]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_EDGES = " \t\n.*$`\"'()[]"
_IDENTIFIER = re.compile(r"(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{6,}")

_VERDICT = re.compile(r"VERDICT\s*[:=]?\s*[\*_`\"']*\s*(ACCEPT|REVISE)\b", re.IGNORECASE)
_BARE = re.compile(r"^\s*[\*_`\"']*\s*(ACCEPT|REVISE)\b", re.IGNORECASE)


def stated(token: str) -> re.Pattern[str]:
    """Finds "The answer is <token>" (`token` a regular expression); group 1 is the token."""
    return re.compile(re.escape(ANSWER_PREFIX) + f"({token})")


def final_answer(text: str) -> str:
    """What follows the last "answer is" (else the whole text), stripped of markup; an opaque
    identifier as written, anything else in lower case, so "(B)." and "b" compare equal."""
    found = _STATED.findall(text)
    core = " ".join((str(found[-1]) if found else text).strip(_EDGES).split())
    return core if _IDENTIFIER.fullmatch(core) else core.lower()


def stated_answer(text: str) -> str | None:
    """`final_answer` of a text that states one ("... answer is X"); None for a text that does
    not (its final answer would be the whole text)."""
    return final_answer(text) if _STATED.search(text) else None


def agree(first: str, second: str) -> bool:
    return final_answer(first) == final_answer(second)


def find_verdict(text: str) -> str | None:
    """ACCEPT or REVISE as a Verifier's reply states it; None when it states neither."""
    found = _VERDICT.findall(text)
    if found:
        return str(found[-1]).upper()
    bare = _BARE.match(text)
    return bare.group(1).upper() if bare else None


def parse_verdict(text: str) -> str:
    """ACCEPT or REVISE; anything unparseable counts as REVISE."""
    return find_verdict(text) or "REVISE"
