"""The README as a newcomer follows it: every command of its `bash` blocks runs, in order, in a
fresh folder, against the replay data; the `make` targets it names exist (`make -n`; the targets
themselves are run by CI and by their own tests). The docs' commands name real subcommands and
options."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]
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


@pytest.mark.slow
def test_the_readme_runs_top_to_bottom(tmp_path: Path, replay_dir: Path) -> None:
    data = replay_dir.resolve()
    lines = steps((ROOT / "README.md").read_text())
    for target in make_targets(lines):
        dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert dry.returncode == 0, f"make {target}: {dry.stderr}"

    shell = [line for line in lines if not line.startswith("make ")]
    script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for line in shell:
        line = line.replace("../shared/data/routerdc", str(data))
        line = line.replace("../shared/data", str(data.parent))
        script += [f"echo {shlex.quote(MARK + line.split()[1])} >&2", line]
    # a copy: loading a policy writes its feature cache (features.db) into the policy's folder
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONSORTIUM_")}
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
    # the served team: the policy folder, its replies naming who answered, its eval on test
    team = json.loads((tmp_path / "policies" / "math-team" / "policy.json").read_text())
    assert team["kind"] == "model-switch" and team["test"]["accuracy"] > 84
    assert "x-consortium-answered-by:" in run.stdout and "x-consortium-stop:" in run.stdout
    assert "model-switch:math · answered by" in run.stderr
    assert re.search(r"model-switch:math\s*│\s*84\.6 ", run.stdout), run.stdout[-3000:]
    assert re.search(r"single:gemini-1\.5-pro\s*│\s*82\.5 ", run.stdout)
    assert run.stdout.count(" ok ") >= 7  # pool check: the 7 models answer
    assert run.stdout.count("The answer is") >= 2  # both `ask`s answered
    report: dict[str, Any] = json.loads((tmp_path / "eval.json").read_text())
    policies = report["policies"]
    assert list(policies)[:2] == ["trinity:trinity-replay", "workflow:vote"], list(policies)
    assert "best_single" in report and "oracle" in report  # baselines added
    for name, entry in policies.items():
        assert (entry["tasks"], entry["errors"]) == (120, 0), name
    assert set(policies["trinity:trinity-replay"]["per_dataset"]) == {"gsm8k", "mmlu", "humaneval"}
    assert report["coordinator"]["id_mean"] is not None and "random" in report
    assert len(policies) == 2 + 7 + 1 + 1  # trinity, vote, every single model, random, oracle
    assert "trinity:trinity-replay" in (tmp_path / "eval.md").read_text()
    assert "trinity:trinity-replay · 1 call(s)" in run.stderr  # `ask` says who answered
    # the library calls: a head trained, evaluated beside the baselines, one round of evolve
    assert "trained: {" in run.stdout and "| trinity:my-trinity |" in run.stdout
    assert "1 round(s) of self-improvement; report: my-evolve/report.md" in run.stdout
    # the sentence encoder loads without transformers' own progress bars
    assert "Loading weights" not in run.stderr and "it/s]" not in run.stderr
    exported = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert exported and all(json.loads(line)["run_id"] for line in exported)
    answer = json.loads(run.stdout[run.stdout.rindex('{"id"') :].strip())
    assert answer["model"] == "consortium" and answer["choices"][0]["message"]["content"]

    # run from the checkout, the session leaves `git status` clean: everything it wrote is ignored
    written = [p.name for p in tmp_path.iterdir() if p.name != "policies"]
    assert "replay.toml" in written and "consortium-traces.db" in written
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
