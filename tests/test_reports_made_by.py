"""Each report under reports/ is made by the Makefile target that reports/README.md names for it:
the command its header prints is that target's command (every option the header gives, with its
value, is in the target's recipe), and a report whose builder prints no command is the `--out` of
one of the target's commands. Read from the Makefile with `make -n`: nothing is run here."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "reports/README.md"
HEADER = re.compile(r"(?:Made|Generated) by `([^`]+)`")


def targets_of_reports() -> dict[str, str]:
    """Report file -> the `make` target its README row names (first `make X` of the row)."""
    rows = re.findall(r"^\| ([\w.-]+\.md) \| ([^|]*) \|", README.read_text(), re.M)
    found = {}
    for name, made_by in rows:
        target = re.search(r"`make ([\w-]+)`", made_by)
        assert target, f"reports/README.md: {name} names no `make` target ({made_by.strip()})"
        found[name] = target.group(1)
    return found


def recipe(target: str) -> list[list[str]]:
    """The words of each command `make TARGET` runs (install skipped, the default variables)."""
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", "install", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [shlex.split(line) for line in planned.stdout.splitlines() if line.strip()]


def options(words: list[str]) -> Counter[tuple[str, str]]:
    """`--option value` pairs (a flag's value is ""), repeated options counted."""
    pairs: Counter[tuple[str, str]] = Counter()
    for i, word in enumerate(words):
        if word.startswith("--"):
            following = words[i + 1] if i + 1 < len(words) else "--"
            pairs[(word, "" if following.startswith("--") else following)] += 1
    return pairs


def program(words: list[str]) -> list[str]:
    """What a command runs, paths and environment left out: `scripts/x.py`, or the words of a
    `consortium` command before its first option."""
    words = [w for w in words if "=" not in w or w.startswith("--")]
    head = [Path(w).name if "/bin/" in w else w for w in words]
    if "python" in head:
        return head[head.index("python") + 1 : head.index("python") + 2]
    first_option = next((i for i, w in enumerate(head) if w.startswith("--")), len(head))
    return head[head.index("consortium") : first_option]


def made_by(target: str, header: str) -> bool:
    """The header's command is one of the target's commands: the same program, and every option
    it prints with the same value (the recipe may pass more: paths a builder leaves out)."""
    if header.startswith("make "):
        return header.split()[1] == target
    said = shlex.split(header)
    return any(
        program(command) == program(said) and not options(said) - options(command)
        for command in recipe(target)
    )


def test_every_report_is_made_by_the_target_its_readme_row_names() -> None:
    targets = targets_of_reports()
    assert targets, "reports/README.md lists no report"
    wrong = []
    for name, target in sorted(targets.items()):
        text = (ROOT / "reports" / name).read_text()
        header = HEADER.search(text[:2000])
        if header:
            if not made_by(target, header.group(1)):
                wrong.append(f"{name}: header `{header.group(1)[:120]}` is not `make {target}`")
            continue
        outs = {
            command[command.index("--out") + 1] for command in recipe(target) if "--out" in command
        }
        if f"reports/{name.removesuffix('.md')}" not in outs:
            wrong.append(f"{name}: no command in its header and not an --out of `make {target}`")
    assert not wrong, "\n".join(wrong)


def test_the_check_tells_another_targets_command_from_its_own() -> None:
    """The rule above can fail: an option with another value, another script, another target."""
    command = "python scripts/trinity_report.py --data ../shared/data/routerdc"
    assert made_by("train", command)
    assert not made_by("train", command.replace("routerdc", "other"))
    assert not made_by("train", command + " --compare")
    assert made_by("compare", command + " --compare")
    assert not made_by("real", command)
    assert made_by("demo", "make demo") and not made_by("demo", "make teams")
