"""docs/own-endpoints.md as a newcomer follows it: every command of its `bash` blocks runs, in
order, in a fresh folder, against real small models behind llama.cpp's server (started and
stopped by the page itself). What each step promises is checked: no failure without its
reason, a large training run estimated before it starts, progress in the log, the run kinds in
the store, a readable cost plot for a zero-price pool."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import benchmarks_dir
from tests.test_readme import steps

ROOT = Path(__file__).parents[1]
MARK = ":::command "

pytestmark = [pytest.mark.real, pytest.mark.e2e]


def test_the_own_endpoints_page_runs_top_to_bottom(tmp_path: Path) -> None:
    lines = steps((ROOT / "docs" / "own-endpoints.md").read_text())
    script = ["set -euo pipefail", "trap 'consortium local stop >/dev/null 2>&1 || true' EXIT"]
    for line in lines:
        line = line.replace("../shared/data/benchmarks", str(benchmarks_dir()))
        script += [f"echo {shlex.quote(MARK + line.split()[1])} >&2", line]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSORTIUM_")}
    env["CONSORTIUM_CACHE"] = os.environ["CONSORTIUM_CACHE"]  # the session's model cache
    env |= {"PATH": f"{Path(sys.executable).parent}:{env['PATH']}", "HF_HUB_OFFLINE": "1"}
    env |= {"COLUMNS": "100"}
    try:
        run = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,  # about 2 minutes on an idle 2-core machine
        )
    finally:  # a killed script runs no trap: the servers it started must not outlive the test
        stop = [sys.executable, "-m", "consortium", "local", "stop"]
        subprocess.run(stop, cwd=tmp_path, env=env, capture_output=True, timeout=60)
    out, err = run.stdout, run.stderr
    assert run.returncode == 0, err[-3000:] + out[-3000:]
    ran = [line.removeprefix(MARK) for line in err.splitlines() if line.startswith(MARK)]
    assert len(ran) == len(lines)
    assert "Traceback" not in err

    # 2. every failed task says why, in the table, the JSON and `traces show`
    report = json.loads((tmp_path / "eval.json").read_text())
    for name, entry in report["policies"].items():
        failures = entry["failures"]
        assert len(failures) == entry["errors"], name
        assert entry["seconds"] > 0 and entry["tokens"] > 0, name  # the costs of a free pool
        for why in failures.values():
            kind = why.split(":")[0]
            assert kind.isidentifier() and kind[0].isupper(), why  # an exception type first
            assert f"{name}: " in out and why in out
    conductor = report["policies"]["conductor:smollm2-135m"]
    if conductor["errors"]:  # SmolLM2 untrained writes prose, not a workflow
        assert "task(s) failed:" in out and "WorkflowSyntaxError" in out
    assert "Timeout is disabled" not in err  # math-verify's notice, once per graded command

    # 3. the default run is estimated and refused without --yes; the small one trains, resumes
    assert "estimate from 3 probe rollout(s): 102,400 rollouts" in err
    assert "pass --yes to start it" in out + err and "not started" in out
    assert "1 turn, role worker: a one-shot router" in err
    assert "resumed from generation 1" in err
    assert "rollouts of the generation: 4/4 (100 %)" in err  # a log line, not a silent bar
    assert json.loads((tmp_path / "my-trinity" / "policy.json").read_text())["generation"] == 2
    assert "trinity:my-trinity" in out  # evaluated beside the single models and random

    # 4. the recorded pool's team, served live: who answered, why it stopped, ties said
    team = json.loads((tmp_path / "my-team" / "policy.json").read_text())
    assert team["kind"] == "scorer-cascade" and team["records"][0]["path"] == "records/mine"
    assert "tie on train" in out
    assert "x-consortium-answered-by: " in out and "x-consortium-stop: " in out

    # 5. evolve in tokens: a line per strategy measured; a plot with a readable axis
    assert " on 2 tuning tasks: " in err
    evolve_report = (tmp_path / "my-evolve" / "report.md").read_text()
    assert "cost measured in tokens" in evolve_report
    assert (tmp_path / "my-evolve" / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    assert "no positive values" not in err  # matplotlib's log axis of zeros

    # 6. the runs by kind; every exported call names its run
    for kind in ("eval", "train", "record", "evolve"):
        assert f" {kind} " in out, kind
    exported = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert exported and all(json.loads(line)["run_id"] for line in exported)
    assert "stopped: " in out and "smollm2-135m" in out.split("stopped: ")[-1]
