"""Screenshots of the trace viewer for docs/traces.md: docs/viewer-run.png, viewer-frontier.png,
viewer-task.png (a Conductor workflow) and viewer-trinity.png (TRINITY turns).

    python scripts/viewer_screenshot.py --data ../shared/data/routerdc

Starts a replay server (split2) and a scripted conductor (a real HTTP server whose plan is
written in tests/viewer_showcase.py: the replay data hold no conductor), evaluates the showcase
policies (three recorded models alone, random, a TRINITY coordinator with a scripted head, the
vote template and the conductor) on 10 GSM8K and 10 MMLU test questions into a fresh trace
store, serves it with `consortium traces view` and photographs the pages in headless Chromium
(Debian's chromium). The PNGs are reduced to 128 colours to stay small.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' showcase helpers
from tests.scripted_server import scripted_server
from tests.viewer_showcase import conductor_script, showcase_run

from consortium.replay.data import load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.runtime.launch import ChildServer


def photograph(driver: WebDriver, url: str, path: Path, height: int) -> None:
    driver.set_window_size(1280, height)
    driver.get(url)
    driver.save_screenshot(str(path))
    with Image.open(path) as shot:
        small = shot.convert("RGB").quantize(colors=128)
    small.save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="docs")
    parser.add_argument("--limit", type=int, default=10, help="questions per dataset")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_replay(args.data, sources=["split2"])
    with (
        tempfile.TemporaryDirectory() as folder,
        ReplayServerProcess(args.data, "--sources", "split2") as replay,
        scripted_server({"conductor": conductor_script}) as boss,
    ):
        path = Path(folder) / "traces.db"
        store, run_id = asyncio.run(
            showcase_run(data, replay.base_url, boss.base_url, path, args.limit)
        )
        task_id = next(iter(store.iter_results(run_id)))["task_id"]
        store.close()
        viewer = ChildServer(
            "traces", "view", "--traces", f"sqlite:///{path}", ready_path="/", label="viewer"
        )
        with viewer:
            options = webdriver.ChromeOptions()
            options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            for argument in ("--headless=new", "--no-sandbox", "--hide-scrollbars"):
                options.add_argument(argument)
            driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
            run = f"{viewer.root}/runs/{quote(run_id)}"
            task = f"{run}/tasks/{quote(task_id)}?policy="
            try:
                photograph(driver, run, out / "viewer-run.png", 980)
                photograph(driver, f"{run}/frontier", out / "viewer-frontier.png", 880)
                photograph(
                    driver, task + quote("conductor:conductor"), out / "viewer-task.png", 1000
                )
                photograph(
                    driver, task + quote("trinity (scripted)"), out / "viewer-trinity.png", 900
                )
            finally:
                driver.quit()
    print(
        f"wrote viewer-run.png, viewer-frontier.png, viewer-task.png, viewer-trinity.png in {out}"
    )


if __name__ == "__main__":
    main()
