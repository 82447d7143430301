"""The package's import graph, read from the source with `ast`: module to module (for the cycle
test) and room to room (the sub-packages and the root's modules, drawn in docs/architecture.md).

Every import of a package module counts, wherever it stands: at module level, under
`if TYPE_CHECKING:`, and inside functions (a lazy load still makes the importer depend on the
imported module, and a cycle through one is a cycle). Imports of other libraries are not edges.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
"""The `consortium` package folder (this module's room's parent)."""
ROOT_ROOM = "(root)"


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports_of(tree: ast.Module, module: str, is_package: bool, names: set[str]) -> set[str]:
    """The package modules (of `names`) that `module`'s import statements name: `from X import
    Y` names the module X.Y when there is one, else X; relative imports are resolved."""
    found: set[str] = set()
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in names else base)
    return found & names


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its source)."""
    names = module_names(package)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = imports_of(tree, name, path.name == "__init__.py", set(names)) - {name}
    return graph


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT_ROOM


def room_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Room -> the other rooms its modules import."""
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph(package).items():
        rooms[room_of(module)] |= {room_of(t) for t in targets} - {room_of(module)}
    return dict(rooms)


def room_graph_markdown(
    rooms: dict[str, set[str]], commands: dict[str, list[str]] | None = None
) -> str:
    """The room table: each room, the rooms it imports, and (given) the commands that `consortium
    --help` lists under it."""
    commands = commands or {}
    lines = ["| room | imports | commands |", "|---|---|---|"]
    for room in sorted(rooms):
        imports = ", ".join(f"`{t}`" for t in sorted(rooms[room])) or "—"
        listed = ", ".join(f"`{c}`" for c in commands.get(room, []))
        lines.append(f"| `{room}` | {imports} | {listed} |")
    return "\n".join(lines)
