"""The answer convention: every prompt asks a model to end with "The answer is X". Here is how an
answer's final answer is read back (to tell whether two answers agree) and how a Verifier's reply
is read as a verdict.

A plug-in whose models write an opaque token instead of answer text (the replay pool) registers
the token's pattern, so that a stated token is compared exactly as written.
"""

from __future__ import annotations

import re

ANSWER_PREFIX = "The answer is "

_STATED = re.compile(r"answer is[:\s]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_EDGES = " \t\n.*$`\"'()[]"
_token_patterns: list[str] = []
_TOKENS: re.Pattern[str] | None = None

_VERDICT = re.compile(r"VERDICT\s*[:=]?\s*[\*_`\"']*\s*(ACCEPT|REVISE)\b", re.IGNORECASE)
_BARE = re.compile(r"^\s*[\*_`\"']*\s*(ACCEPT|REVISE)\b", re.IGNORECASE)


def stated(token: str) -> re.Pattern[str]:
    """Finds "The answer is <token>" (`token` a regular expression); group 1 is the token."""
    return re.compile(re.escape(ANSWER_PREFIX) + f"({token})")


def register_token(token: str) -> None:
    """Declare an answer token (a regular expression): `final_answer` returns a stated token as
    written, before any other reading of the text."""
    global _TOKENS
    if token not in _token_patterns:
        _token_patterns.append(token)
        _TOKENS = stated("|".join(f"(?:{t})" for t in _token_patterns))


def final_answer(text: str) -> str:
    """A registered token, else what follows the last "answer is", else the whole text; stripped
    of markup and case so "(B)." and "b" compare equal."""
    token = _TOKENS.findall(text) if _TOKENS is not None else []
    if token:
        return str(token[-1])
    found = _STATED.findall(text)
    core = str(found[-1]) if found else text
    return " ".join(core.strip(_EDGES).split()).lower()


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
