"""The examples a code task's prompt writes for its own function, as (call, expected) pairs the
code Verifier runs: doctest lines (`>>> f(x)` then the value), call lines (`f(x) ➞ y`,
`f(x) returns y`, `f(x) = y`, `* f(x) -> y`, `f(x) # => y`) and described ones (`For x = v the
output should be y`; `Input: x = v` … `Output: y`). A pair is kept only when the call parses as a
call of the task's function and the expected value is a Python literal, so a line of prose that
looks like an example is dropped rather than run."""

from __future__ import annotations

import ast
import re

from consortium.tasks.code import entry_point
from consortium.tasks.parse_python import parse_expression, parse_module

_DOCTEST = re.compile(r"^\s*>>>\s*(.+?)\s*\n\s*([^\n>][^\n]*?)\s*$", re.MULTILINE)
_SEPARATOR = re.compile(
    r"^\s*(?:#\s*)?(?:==>|=>|➞|->|→|==|=|returns|should return|should be|is)\s*(.+?)\s*$"
)
_LINE_START = re.compile(r"^\s*(?:>>>\s*|[*-]\s*|for\s+|assert\s+)?")
_HELPERS = frozenset({"round", "sorted", "abs", "len", "set", "list", "tuple", "sum", "int", "str"})
"""Builtins an example may wrap the task's call in (`round(f(x), 2)`)."""
_DESCRIBED = re.compile(
    r"^\s*for\s+(.+?),?\s+the\s+(?:output|result)\s+(?:should\s+be|will\s+be|is)\s+(.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_INPUT_OUTPUT = re.compile(
    r"^\s*Input\s*:(.*?)^\s*Output\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE | re.DOTALL
)
_NAMED_LINE = re.compile(r"^\s*([A-Za-z_]\w*)\s*:\s*(.+?)\s*$")
_NOT_A_LITERAL = (ValueError, SyntaxError, TypeError, MemoryError, RecursionError)
"""What ast.literal_eval raises on text or a node that is not a literal."""


def docstring_examples(prompt: str) -> list[tuple[str, str]]:
    """(call, expected) pairs for the prompt's function, from the first form the prompt uses."""
    name = entry_point(prompt)
    if name is None:
        return []
    parameters = _parameters(prompt, name)
    for found in (
        _doctests(prompt, name),
        _call_lines(prompt, name),
        _described(prompt, name, parameters),
    ):
        if found:
            return found
    return []


def _doctests(prompt: str, name: str) -> list[tuple[str, str]]:
    pairs = []
    for call, expected in _DOCTEST.findall(prompt):
        parsed = _call(call, name)
        value = _literal(expected)
        if parsed is not None and value is not None:
            pairs.append((parsed, value))
    return pairs


def _call_lines(prompt: str, name: str) -> list[tuple[str, str]]:
    """Lines that start with a call (`f(x)`, `round(f(x), 2)`) followed by a separator and the
    value; the call ends at the first `)` that closes a valid expression."""
    pairs = []
    for line in prompt.splitlines():
        rest = line[_LINE_START.match(line).end() :]  # type: ignore[union-attr]
        if not re.match(rf"(?:\w+\()?{re.escape(name)}\(", rest):
            continue
        for end in (i + 1 for i, char in enumerate(rest) if char == ")"):
            parsed = _call(rest[:end], name)
            if parsed is None:
                continue
            separated = _SEPARATOR.match(rest[end:])
            value = _literal(separated.group(1)) if separated else None
            if value is not None:
                pairs.append((parsed, value))
            break
    return pairs


def _described(prompt: str, name: str, parameters: list[str]) -> list[tuple[str, str]]:
    pairs = []
    found = [(m.group(1), m.group(2)) for m in _DESCRIBED.finditer(prompt)]
    found += [(m.group(1), m.group(2)) for m in _INPUT_OUTPUT.finditer(prompt)]
    for arguments, expected in found:
        call = _call_from_arguments(name, arguments, parameters)
        value = _literal(expected)
        if call is not None and value is not None:
            pairs.append((call, value))
    return pairs


def _call_from_arguments(name: str, text: str, parameters: list[str]) -> str | None:
    """`x = 1, y = [2]`, lines of `x : 1`, or a bare `1` → a call; the longest prefix (cut at a
    comma) that parses, so trailing prose is dropped. Names the function does not take make the
    arguments positional, in the order written."""
    lines = [line for line in text.splitlines() if line.strip()]
    named = [_NAMED_LINE.match(line) for line in lines]
    if len(lines) > 1 and all(named):
        text = ", ".join(f"{m.group(1)}={m.group(2)}" for m in named if m)
    text = " ".join(text.split())
    cuts = [len(text)] + [i for i in range(len(text) - 1, 0, -1) if text[i] == ","]
    for cut in cuts:
        try:
            parsed = parse_expression(f"_f({text[:cut]})")
        except SyntaxError:
            continue
        if not isinstance(parsed, ast.Call) or (not parsed.args and not parsed.keywords):
            continue
        values = [*parsed.args, *(k.value for k in parsed.keywords)]
        if not all(_is_literal(v) for v in values):
            continue
        keywords = [k.arg for k in parsed.keywords]
        if parsed.args or not all(k in parameters for k in keywords):
            return f"{name}({', '.join(ast.unparse(v) for v in values)})"
        named_values = ", ".join(f"{k.arg}={ast.unparse(k.value)}" for k in parsed.keywords)
        return f"{name}({named_values})"
    return None


def _parameters(prompt: str, name: str) -> list[str]:
    match = re.search(rf"^def\s+{re.escape(name)}\s*\((.*?)\)\s*(?:->[^:]*)?:", prompt, re.S | re.M)
    if match is None:
        return []
    try:
        function = parse_module(f"def _f({match.group(1)}): pass").body[0]
    except SyntaxError:
        return []
    assert isinstance(function, ast.FunctionDef)
    return [argument.arg for argument in function.args.args]


def _call(text: str, name: str) -> str | None:
    """The expression as clean source when it calls the task's function on literals (possibly
    inside one of _HELPERS); None otherwise."""
    try:
        parsed = parse_expression(text.strip())
    except SyntaxError:
        return None
    calls = [node for node in ast.walk(parsed) if isinstance(node, ast.Call)]
    names = {node.id for node in ast.walk(parsed) if isinstance(node, ast.Name)}
    ours = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == name]
    if not isinstance(parsed, ast.Call) or not ours or not names <= _HELPERS | {name}:
        return None
    if not all(_is_literal(a) for c in ours for a in [*c.args, *(k.value for k in c.keywords)]):
        return None
    return ast.unparse(parsed)


def _literal(text: str) -> str | None:
    """The expected value as literal source: without a trailing comment, as written, without a
    parenthesised remark or full stop, the value a worked sum ends in (`1 + 9 = 10`), or a
    lower-case true / false; None when no form is a literal."""
    text = text.strip()
    candidates = [text.split(" #")[0], text, re.sub(r"\s*\([^()]*\)\s*$", "", text)]
    candidates.append(text.rsplit("= ", 1)[-1])
    for candidate in candidates:
        candidate = candidate.strip().rstrip(".,;").strip()
        candidate = {"true": "True", "false": "False"}.get(candidate, candidate)
        try:
            ast.literal_eval(candidate)
        except _NOT_A_LITERAL:
            continue
        return candidate
    return None


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except _NOT_A_LITERAL:
        return False
    return True
