"""The package's import graph, read from the source with `ast`: module to module (for the cycle
test) and room to room (the sub-packages and root modules, drawn in docs/architecture.md).

    python scripts/architecture.py            # the room graph as Markdown
    python scripts/architecture.py --check    # exit 1 if docs/architecture.md shows another graph

An import counts when it runs at import time or for the type checker: module level and
`if TYPE_CHECKING:` blocks. Imports inside functions are deliberate lazy loads (heavy libraries,
plug-ins) and are not edges.
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "consortium"
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- rooms:begin -->", "<!-- rooms:end -->"


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If | ast.Try):  # TYPE_CHECKING blocks, optional imports
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    found.append(inner)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at module level."""
    names = module_names(package)
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for node in _top_level_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.level == 0 and node.module is not None:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in names
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            graph[name] |= {t for t in targets if t in names and t != name}
    return graph


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def room_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph(package).items():
        rooms[room_of(module)] |= {room_of(t) for t in targets} - {room_of(module)}
    return dict(rooms)


def room_graph_markdown(rooms: dict[str, set[str]]) -> str:
    lines = ["| room | imports |", "|---|---|"]
    for room in sorted(rooms):
        lines.append(f"| `{room}` | {', '.join(f'`{t}`' for t in sorted(rooms[room])) or '—'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description="The package's import graph between its rooms.")
    parser.add_argument("--check", action="store_true", help="compare with docs/architecture.md")
    args = parser.parse_args()
    drawn = room_graph_markdown(room_graph())
    if not args.check:
        print(drawn)
        return 0
    text = DOC.read_text()
    shown = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    if shown != drawn.strip():
        print("docs/architecture.md's room graph is out of date: run scripts/architecture.py")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
