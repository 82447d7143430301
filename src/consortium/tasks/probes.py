"""Probe calls for a code task: its docstring examples' calls with one literal argument varied at
a time (type-preserving: an int ± 1, a string reversed or emptied, a list shortened or sorted).
Programs that all pass the examples can still behave differently on these, so agreement by
behaviour on them clusters programs the way AlphaCode does, on inputs derived from the prompt
alone (never the hidden tests). Probes have no expected value: they only tell programs apart."""

from __future__ import annotations

import ast
from contextlib import suppress

from consortium.tasks.code import entry_point
from consortium.tasks.docstring_examples import docstring_examples
from consortium.tasks.parse_python import parse_expression

PROBE_LIMIT = 24
"""At most this many probe calls per task (the examples' own calls are not probes)."""


def probe_calls(prompt: str, limit: int = PROBE_LIMIT) -> list[str]:
    """The task's probe calls (`varied_calls` of its docstring examples' calls)."""
    examples = [call for call, _ in docstring_examples(prompt)]
    return varied_calls(entry_point(prompt), examples, limit)


def varied_calls(name: str | None, examples: list[str], limit: int = PROBE_LIMIT) -> list[str]:
    """Calls of function `name`, each one of the examples' calls with one argument varied, in the
    examples' order, without repeats of an example's call or of each other; none without a
    function name (a task in words)."""
    if name is None:
        return []
    seen = set(examples)
    probes: list[str] = []
    for call in examples:
        arguments = _literal_arguments(call, name)
        if arguments is None:
            continue
        positional, keywords = arguments
        for index, value in enumerate(positional):
            for variant in _variants(value):
                varied = [*positional[:index], variant, *positional[index + 1 :]]
                _add(probes, seen, _render(name, varied, keywords))
        for key, value in keywords.items():
            for variant in _variants(value):
                _add(probes, seen, _render(name, positional, {**keywords, key: variant}))
    return probes[:limit]


def _add(probes: list[str], seen: set[str], call: str) -> None:
    if call not in seen:
        seen.add(call)
        probes.append(call)


def _literal_arguments(call: str, name: str) -> tuple[list[object], dict[str, object]] | None:
    """The arguments of the first call of `name` in `call` (which may wrap it, `round(f(x), 2)`),
    when every one of them is a literal."""
    for node in ast.walk(parse_expression(call)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            try:
                positional = [ast.literal_eval(argument) for argument in node.args]
                keywords = {
                    keyword.arg: ast.literal_eval(keyword.value)
                    for keyword in node.keywords
                    if keyword.arg is not None
                }
            except (ValueError, SyntaxError, TypeError):
                return None
            if len(keywords) != len(node.keywords):  # a **mapping argument
                return None
            return positional, keywords
    return None


def _render(name: str, positional: list[object], keywords: dict[str, object]) -> str:
    parts = [repr(value) for value in positional]
    parts += [f"{key}={value!r}" for key, value in keywords.items()]
    return f"{name}({', '.join(parts)})"


def _variants(value: object) -> list[object]:
    """Values of the same type near `value`, without `value` itself."""
    found: list[object]
    if isinstance(value, bool):
        found = [not value]
    elif isinstance(value, int):
        found = [value + 1, value - 1, 0, -value, 2 * value + 1, 1]
    elif isinstance(value, float):
        found = [value * 2, 0.0, -value, value + 0.5]
    elif isinstance(value, str):
        found = ["", value[::-1], value + value, value.upper(), value[:1], value[1:]]
    elif isinstance(value, list):
        found = [[], value[::-1], value[:1], value + value, value[1:]]
        with suppress(TypeError):  # elements of mixed types do not sort
            found.append(sorted(value))
    elif isinstance(value, tuple):
        found = [(), value[::-1], value[:1]]
    else:
        found = []
    distinct: list[object] = []
    for variant in found:
        if variant != value and variant not in distinct:
            distinct.append(variant)
    return distinct
