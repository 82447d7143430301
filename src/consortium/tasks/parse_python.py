"""`ast.parse` safe to call from several threads at once.

CPython 3.11 can raise `SystemError: AST constructor recursion depth mismatch` when threads parse
at the same time (python/cpython#106905); the answer readers parse docstring examples in worker
threads (`asyncio.to_thread`), so every parse here takes one lock."""

from __future__ import annotations

import ast
import threading

_PARSING = threading.Lock()


def parse_module(source: str) -> ast.Module:
    with _PARSING:
        return ast.parse(source)


def parse_expression(source: str) -> ast.expr:
    """The expression `source` holds (`ast.parse(source, mode="eval").body`)."""
    with _PARSING:
        return ast.parse(source, mode="eval").body
