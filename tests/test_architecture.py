"""The package's shape: imports flow one way (no cycle between modules or between rooms), generic
code never imports the replay plug-in, the root is a map of packages, no module is too long, and
docs/architecture.md draws the graph the imports make."""

from __future__ import annotations

import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from consortium.architecture.graph import PACKAGE, import_graph, room_graph, room_of

ROOT = Path(__file__).resolve().parent.parent
ROOT_MODULES = {"__init__", "__main__"}
MAX_LINES = 400


def acyclic(graph: dict[str, set[str]]) -> list[str] | None:
    """None when the graph has no cycle, else one cycle's nodes."""
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        return list(error.args[1])
    return None


def test_no_import_cycle_between_modules() -> None:
    assert acyclic(import_graph()) is None


def test_no_import_cycle_between_rooms() -> None:
    assert acyclic(room_graph()) is None


def test_a_cycle_is_found() -> None:
    # The check itself can fail: a planted two-module loop is reported.
    graph = import_graph()
    graph["consortium.core.errors"].add("consortium.coord.base")
    assert acyclic(graph) is not None


def test_imports_inside_functions_count(tmp_path: Path) -> None:
    """A lazy import of a package module is an edge (a cycle through one is a cycle); a lazy
    import of another library is none."""
    package = tmp_path / "consortium"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "x.py").write_text(
        "def f():\n    from consortium.a import y\n    import numpy\n"
    )
    (package / "a" / "y.py").write_text("from . import x\nfrom .x import f\n")
    graph = import_graph(package)
    assert graph["consortium.a.x"] == {"consortium.a.y"}
    assert graph["consortium.a.y"] == {"consortium.a.x"}
    assert acyclic(graph) is not None


def test_generic_code_never_imports_the_replay_plugin() -> None:
    importers = {
        module
        for module, targets in import_graph().items()
        if room_of(module) not in {"replay", "cli", "demo"}
        and any(room_of(t) == "replay" for t in targets)
    }
    assert importers == set()


def test_the_root_holds_packages_only() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == ROOT_MODULES


@pytest.mark.parametrize("folder", ["src", "scripts"])
def test_no_module_is_over_400_lines(folder: str) -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / folder).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_docs_draw_the_real_graph() -> None:
    check = subprocess.run(
        [sys.executable, str(Path(ROOT, "scripts", "architecture.py")), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
