"""Screenshots of the trace viewer for the README: docs/viewer-run.png and docs/viewer-task.png.

    python scripts/viewer_screenshot.py --data ../shared/data/routerdc

Starts a replay server (split2, 7 open models), runs `consortium eval` with three policies on 10
GSM8K and 10 MMLU test questions into a fresh trace store, serves `consortium traces view` and
photographs a run page and a debate task page in headless Chromium (Debian's chromium).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from consortium.pool.config import dump_pool
from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.launch import ChildServer


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="docs")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_replay(args.data, sources=["split2"])
    models = data.models["split2"][:3]
    cli = [sys.executable, "-m", "consortium"]
    with (
        tempfile.TemporaryDirectory() as folder,
        ReplayServerProcess(args.data, "--sources", "split2") as replay,
    ):
        pool = Path(folder) / "pool.toml"
        config = replay_pool(data, replay.base_url, models)
        pool.write_text(dump_pool(config))
        traces = f"sqlite:///{folder}/traces.db"
        team = ",".join(config.names)
        subprocess.run(
            [*cli, "eval", "--pool", str(pool), "--traces", traces, "--no-baselines",
             "--tasks", f"replay:data={args.data}:datasets=gsm8k,mmlu:limit=10",
             "--policy", f"single:{config.names[0]}", "--policy", f"workflow:vote:models={team}",
             "--policy", f"workflow:debate:models={team}"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        viewer = ChildServer("traces", "view", "--traces", traces, ready_path="/", label="viewer")
        with viewer:
            options = webdriver.ChromeOptions()
            options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            for argument in ("--headless=new", "--no-sandbox", "--window-size=1280,1100"):
                options.add_argument(argument)
            driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
            try:
                driver.get(viewer.root)
                driver.find_element(By.CSS_SELECTOR, "a.run").click()
                time.sleep(1.0)  # the plots load after the page
                driver.save_screenshot(str(out / "viewer-run.png"))
                debate = next(
                    row.find_element(By.CSS_SELECTOR, "a.task")
                    for row in driver.find_elements(By.CSS_SELECTOR, "table.tasks tr")[1:]
                    if "workflow:debate" in row.text
                )
                debate.click()
                driver.save_screenshot(str(out / "viewer-task.png"))
            finally:
                driver.quit()
    print(f"wrote {out / 'viewer-run.png'} and {out / 'viewer-task.png'}")


if __name__ == "__main__":
    main()
