"""Every `--help` names what the README and the docs use, and says it in the words the code reads:
the headers the server sets, the task forms the task parser accepts, the kinds `train coordinator`
takes (auto included), the policy forms `ask`, `eval` and `serve` share. Help examples write to a
scratch path, never over a committed file. Read in process, as typer renders the help."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.models import CommandInfo
from typer.testing import CliRunner

from consortium.architecture.graph import import_graph, room_graph, room_of
from consortium.cli import command
from consortium.cli.app import COMMAND_ROOMS, app, command_name
from consortium.coord.answers.kind_names import DESCRIPTIONS, FITTED_KINDS
from consortium.coord.spec_forms import (
    CONDUCTOR_OPTIONS,
    DEBATE_OPTIONS,
    POLICY_SPECS,
    WORKFLOW_KINDS,
)
from consortium.serve.headers import ANSWER_HEADERS
from consortium.tasks.forms import TASK_FORMS, TASK_SPECS, known_names
from consortium.tasks.spec import parse_spec
from tests.test_readme import commands

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTPUTS = ("--out", "--report", "--markdown", "--json", "--png", "--write-pool")
"""Options whose value a command writes."""


def words(text: str) -> str:
    """Text with the help's boxes and line breaks gone: one space between words."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def help_of(*path: str) -> str:
    """`consortium PATH --help` as one line of words, rendered wide (nothing wrapped or cut);
    `app` itself, as typer renders it (`consortium.cli.command` only reflows its prose)."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.output
    return words(result.output)


def documented(option: str, of: str = "consortium ") -> list[str]:
    """Every value the README's and the docs' commands (those starting `of`) give `option`; a
    placeholder (`--tasks SPEC`, `--tasks …`) is no value."""
    values = []
    for page in PAGES:
        for line in commands(page.read_text()):
            if line.startswith(of):
                given = shlex.split(line.split(" #")[0].rstrip(" &"))
                values += [given[i + 1] for i, w in enumerate(given[:-1]) if w == option]
    return [value for value in values if not value.isupper() and value != "…"]


def test_serve_help_lists_every_header_the_server_sets() -> None:
    from consortium.serve.answer_account import answer_headers as _headers

    account: dict[str, Any] = {"calls": 2, "models": ["a"], "roles": ["worker"], "cost": 0.5}
    account |= {"task_id": "t", "run_id": "r", "answered_by": ["a"], "stop": ["voted"]}
    account |= {"failed": ["b"], "policy_version": "v1", "explored": True}
    assert tuple(_headers(account)) == ANSWER_HEADERS  # the server sets these, in this order
    shown = help_of("serve")
    assert all(name in shown for name in ANSWER_HEADERS), shown
    page = words((ROOT / "docs/serve.md").read_text())
    assert all(name in page or f"`-{name.split('-', 2)[2]}`" in page for name in ANSWER_HEADERS)


def test_eval_help_lists_every_task_form_and_the_docs_use_only_those() -> None:
    shown = help_of("eval")
    assert words(TASK_SPECS) in shown
    assert set(known_names()) == {"records", "replay", "arithmetic", "gsm8k", "math",
                                  "humaneval", "mbpp", "mc"}  # fmt: skip
    forms = {name: form for form in TASK_FORMS for name in form.names}
    given = [*documented("--tasks"), *documented("--heldout"), *documented("--final")]
    given += re.findall(r'tasks = "([^"]+)"', (ROOT / "README.md").read_text())
    assert any(spec.startswith("records:") for spec in given)
    for text in given:
        spec = parse_spec(text)
        assert spec.name in forms, text
        assert set(spec.options) <= forms[spec.name].keys, text


def test_train_coordinator_help_and_its_refusal_name_every_kind_auto_included() -> None:
    shown = help_of("train", "coordinator")
    assert FITTED_KINDS[0] == "auto"
    for kind in FITTED_KINDS:
        assert f"{kind} ({words(DESCRIPTIONS[kind])})" in shown, kind
    refused = CliRunner().invoke(
        app, ["train", "coordinator", "--kind", "bogus", "--records", "x", "--out", "y"]
    )
    assert refused.exit_code != 0
    assert str(refused.exception) == (
        f"--kind: expected one of {', '.join(FITTED_KINDS)}, got 'bogus'"
    )
    given = documented("--kind", of="consortium train coordinator ")
    assert "auto" in given and set(given) <= set(FITTED_KINDS)


@pytest.mark.parametrize("name", ["ask", "eval", "serve"])
def test_ask_eval_and_serve_describe_the_policy_forms_alike(name: str) -> None:
    assert f"What answers: {words(POLICY_SPECS)}" in help_of(name)


def test_the_docs_policies_are_of_those_forms() -> None:
    given = documented("--policy")
    assert len(given) > 10
    for spec in given:
        kind, _, rest = spec.partition(":")
        if kind == "workflow":
            workflow, *options = rest.split(":")
            assert workflow in WORKFLOW_KINDS, spec
            assert all(o.startswith("models=") for o in options), spec
        elif kind == "debate":
            assert {o.split("=")[0] for o in rest.split(":")} <= set(DEBATE_OPTIONS), spec
        elif kind == "conductor":
            _, *options = rest.split(":")
            assert {o.split("=")[0] for o in options} <= set(CONDUCTOR_OPTIONS), spec
        else:  # a model, random, or a folder
            assert kind in ("single", "random") or not rest, spec


def test_help_examples_write_to_a_scratch_path_not_a_committed_file() -> None:
    tracked = set(
        subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    )
    root = command()
    checked = 0

    def visit(cmd: Any, path: list[str]) -> None:
        nonlocal checked
        for name, sub in getattr(cmd, "commands", {}).items():
            visit(sub, [*path, name])
        for line in (cmd.help or "").splitlines():
            line = line.strip().rstrip("\\").strip()
            if not line.startswith("consortium "):
                continue
            given = shlex.split(line.split(" #")[0])
            for i, word in enumerate(given[:-1]):
                if word in OUTPUTS:
                    written = given[i + 1].rstrip("/")
                    assert not any(t == written or t.startswith(written + "/") for t in tracked), (
                        f"consortium {' '.join(path)}: {line}"
                    )
                    checked += 1

    visit(root, [])
    assert checked >= 8


def highest_rooms(modules: set[str]) -> set[str]:
    """The rooms a command's modules import (their own, outside cli) that no other of them
    imports, directly or not: where the work the command asks for is done."""
    graph, rooms_graph = import_graph(), room_graph()

    def below(room: str) -> set[str]:
        found: set[str] = set()
        todo = [room]
        while todo:
            for lower in rooms_graph.get(todo.pop(), set()) - found:
                found.add(lower)
                todo.append(lower)
        return found

    rooms = {room_of(t) for m in modules for t in graph[m]} | {room_of(m) for m in modules}
    rooms -= {"cli", "core"}
    return {r for r in rooms if not any(r in below(other) for other in rooms - {r})}


def module_of(info: CommandInfo) -> str:
    assert info.callback is not None
    return info.callback.__module__


def test_help_groups_the_commands_in_the_rooms_of_the_architecture() -> None:
    command()  # the panels are set as the command is built
    listed = [*app.registered_commands, *app.registered_groups]
    modules = {command_name(info): {module_of(info)} for info in app.registered_commands} | {
        command_name(group): {module_of(c) for c in group.typer_instance.registered_commands}
        for group in app.registered_groups
        if group.typer_instance is not None
    }
    assert set(COMMAND_ROOMS) == set(modules)
    assert set(COMMAND_ROOMS.values()) <= set(room_graph())
    wrong = {
        name: sorted(highest_rooms(found))
        for name, found in modules.items()
        if COMMAND_ROOMS[name] not in highest_rooms(found)
    }
    assert wrong == {}, "each command's room must be the highest room its module imports"
    assert all(info.rich_help_panel == COMMAND_ROOMS[command_name(info)] for info in listed)
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    panels = [
        line.split("─ ", 1)[1].split(" ─")[0]
        for line in shown.splitlines()
        if line.startswith("╭─ ")
    ]
    assert set(panels) == {"Options", *COMMAND_ROOMS.values()}
