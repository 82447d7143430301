"""The README as a newcomer follows it: every command of its `bash` blocks runs, in order, in a
fresh folder, against the replay data; the `make` targets it names exist (`make -n`; the targets
themselves are run by CI and by their own tests). The docs' commands name real subcommands and
options."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from consortium.records import load_records

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
MARK = ":::command "


def commands(markdown: str) -> list[str]:
    """The commands of the fenced `bash` blocks, continuation lines joined, comments dropped."""
    found: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                found.append(line)
    return found


def steps(markdown: str) -> list[str]:
    """The README's session in order: each command of a `bash` block, and each `python` block
    whole, as a shell step that feeds it to Python."""
    found: list[str] = []
    for language, body in re.findall(r"^```(bash|python)\n(.*?)^```", markdown, flags=re.S | re.M):
        if language == "python":
            found.append(f"python - <<'PYTHON'\n{body}PYTHON")
        else:
            found += commands(f"```bash\n{body}```\n")
    return found


def test_commands_are_read_from_the_blocks() -> None:
    text = "x\n```bash\n# a comment\nconsortium a \\\n    --b c   # why\n\nmake d\n```\n"
    assert commands(text) == ["consortium a --b c   # why", "make d"]
    mixed = "```bash\na\n```\n```python\nx = 1\n```\n```bash\nb\n```\n"
    assert steps(mixed) == ["a", "python - <<'PYTHON'\nx = 1\nPYTHON", "b"]


def make_targets(lines: list[str]) -> list[str]:
    return [line.split()[1] for line in lines if line.startswith("make ")]


@pytest.mark.e2e
def test_the_readme_runs_top_to_bottom(tmp_path: Path, replay_dir: Path) -> None:
    data = replay_dir.resolve()
    lines = steps((ROOT / "README.md").read_text())
    for target in make_targets(lines):
        dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert dry.returncode == 0, f"make {target}: {dry.stderr}"

    # `source .venv/bin/activate`: here the test's interpreter comes first on PATH
    shell = [line for line in lines if not line.startswith(("make ", "source "))]
    script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for line in shell:
        line = line.replace("../shared/data/routerdc", str(data))
        line = line.replace("../shared/data", str(data.parent))
        script += [f"echo {shlex.quote(MARK + line.split()[1])} >&2", line]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSORTIUM_")}
    env["CONSORTIUM_CACHE"] = os.environ["CONSORTIUM_CACHE"]  # the session's model cache
    env |= {"PATH": f"{Path(sys.executable).parent}:{env['PATH']}", "HF_HUB_OFFLINE": "1"}
    env |= {"COLUMNS": "100"}
    run = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    ran = [line.removeprefix(MARK) for line in run.stderr.splitlines() if line.startswith(MARK)]
    assert len(ran) == len(shell)  # every command ran

    # what each step promised
    assert run.stdout.count(" ok ") >= 3  # pool check: the three models answer
    # the first answer is a real recorded text: gemini's own words, read back from the records
    rows = load_records(tmp_path / "records" / "math").table.to_pylist()
    question = "Determine the number of ways to arrange the letters of the word GAMMAS."
    recorded = {r["model"]: r["response"] for r in rows if r["question"] == question}
    assert recorded["gemini-1.5-pro"].strip() in run.stdout and "360" in recorded["gemini-1.5-pro"]
    assert "single:gemini-1.5-pro · answered by gemini-1.5-pro · 1 call(s)" in run.stderr
    # the team: picked on train, answers the same problem with Llama's 180 after three calls
    team = json.loads((tmp_path / "my-team" / "policy.json").read_text())
    assert team["selection"].startswith("auto: ") and team["test"]["accuracy"] > 84
    assert recorded["Llama-3.1-70B-Instruct"].strip() in run.stdout
    assert "boxed{180}" in recorded["Llama-3.1-70B-Instruct"]
    asked = re.search(
        r"(\S+:math) · answered by Llama-3\.1-70B-Instruct .*· 3 call\(s\)", run.stderr
    )
    assert asked, run.stderr[-3000:]
    # why the cascade stopped, as the README quotes it
    (quoted,) = re.findall(r"`(every stage asked: [^`]+)`", README)
    assert f"(stop: {quoted})" in run.stderr, run.stderr[-3000:]
    cost = re.findall(r"\$(\d\.\d+) · run", run.stderr)
    assert 8 < float(cost[1]) / float(cost[0]) < 10  # "about nine times gemini's cost"
    assert "cascade `auto` picked" in " ".join(README.split()) and "cascade" in team["kind"]
    # eval over HTTP: the figures the folder states
    assert re.search(rf"{re.escape(asked.group(1))}\s*│\s*84\.6 ", run.stdout), run.stdout[-3000:]
    assert re.search(r"single:gemini-1\.5-pro\s*│\s*82\.5 ", run.stdout)
    assert round(team["test"]["accuracy"], 1) == 84.6
    # serve: the answering model's own text, its headers say who and why
    assert "x-consortium-answered-by:" in run.stdout and "x-consortium-stop:" in run.stdout
    answer, _ = json.JSONDecoder().raw_decode(run.stdout[run.stdout.rindex('{"id"') :])
    assert answer["model"] == "consortium" and answer["choices"][0]["message"]["content"]
    assert "curl: (7)" not in run.stderr  # the serve example waits for the server quietly
    # the Python block: a second team fitted and both evaluated
    assert "models in train-accuracy order | test: 84.6" in run.stdout
    assert "| model-switch:math |" in run.stdout
    # traces: both asks, the eval and the served request are runs in the store
    assert run.stdout.count("ask") >= 2

    # run from the checkout, the session leaves `git status` clean: everything it wrote is ignored
    written = [p.name for p in tmp_path.iterdir()]
    assert {"records", "math-pool.toml", "my-team", "consortium-traces.db"} <= set(written)
    ignored = subprocess.run(
        ["git", "check-ignore", *written], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    assert sorted(ignored) == sorted(written)


def test_docs_commands_name_real_subcommands_and_options() -> None:
    from consortium.cli import command

    root = command()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for line in commands(page.read_text()):
            if line.startswith("make "):
                target = line.split()[1]
                dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True)
                assert dry.returncode == 0, f"{page.name}: no make target {target!r}"
                continue
            if not line.startswith("consortium "):
                continue
            words = shlex.split(line.split(" #")[0].rstrip(" &"))
            cmd = root
            for word in words[1:]:
                subcommands = getattr(cmd, "commands", {})
                if word not in subcommands:
                    break
                cmd = subcommands[word]
            assert not getattr(cmd, "commands", None), f"{page.name}: {line}: no such command"
            known = {name for p in cmd.params for name in (*p.opts, *p.secondary_opts)}
            for word in words:
                if word.startswith("--"):
                    option = word.split("=")[0]
                    assert option in known, f"{page.name}: {line}: no option {option}"
            checked += 1
    assert checked >= 30


def test_reports_readme_lists_every_report() -> None:
    """reports/README.md names each report's command, pool and minutes: one row per file."""
    listed = re.findall(r"^\| ([\w.-]+\.md) \|", (ROOT / "reports/README.md").read_text(), re.M)
    present = sorted(p.name for p in (ROOT / "reports").glob("*.md") if p.name != "README.md")
    assert sorted(listed) == present
