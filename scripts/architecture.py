"""Draw the package's room graph (`consortium.architecture.graph`) and the commands `consortium
--help` lists under each room (`consortium.cli.app.COMMAND_ROOMS`) into docs/architecture.md.

    python scripts/architecture.py            # the room table as Markdown
    python scripts/architecture.py --write    # redraw it in docs/architecture.md
    python scripts/architecture.py --check    # exit 1 if docs/architecture.md shows another one
"""

from __future__ import annotations

import argparse
from pathlib import Path

from consortium.architecture.graph import room_graph, room_graph_markdown
from consortium.cli.app import COMMAND_ROOMS

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
BEGIN, END = "<!-- rooms:begin -->", "<!-- rooms:end -->"


def main() -> int:
    parser = argparse.ArgumentParser(description="The package's import graph between its rooms.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="compare with docs/architecture.md")
    action.add_argument("--write", action="store_true", help="redraw it in docs/architecture.md")
    args = parser.parse_args()
    commands: dict[str, list[str]] = {}
    for command, room in COMMAND_ROOMS.items():
        commands.setdefault(room, []).append(command)
    drawn = room_graph_markdown(room_graph(), commands)
    if not (args.check or args.write):
        print(drawn)
        return 0
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    if args.write:
        DOC.write_text(f"{text[:start]}\n{drawn}\n{text[end:]}")
        return 0
    if text[start:end].strip() != drawn.strip():
        print(
            "docs/architecture.md's room graph is out of date: run scripts/architecture.py --write"
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
