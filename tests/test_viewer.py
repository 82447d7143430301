"""The trace viewer in a real headless Chromium (Debian's chromium + chromedriver, Selenium)."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from consortium.coord.registry import build_coordinator
from consortium.evaluation.runner import run_policy
from consortium.pool import Pool
from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ReplayGrader, load_replay_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from consortium.viewer.app import TraceViewer
from tests.scripted_server import app_in_thread

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def browser() -> WebDriver:
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.fail(
            "the viewer test needs Debian's chromium and chromium-driver: "
            "sudo apt-get install chromium chromium-driver (make test does it when run as root)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def picture(png: bytes) -> np.ndarray:
    pixels: np.ndarray = imread(io.BytesIO(png), format="png")
    return pixels


async def populated_store(data: ReplayData, base_url: str, path: Path) -> tuple[TraceStore, str]:
    """A real evaluation on the replay pool: one model alone, and a three-model vote."""
    models = data.models["split2"][:3]
    config = replay_pool(data, base_url, models)
    store = TraceStore(f"sqlite:///{path}")
    run_id = store.start_run("eval", pool="replay (viewer test)")
    tasks = load_replay_tasks(data, datasets=["gsm8k", "mmlu"], limit=4).tasks
    names = config.names
    async with Pool(config) as pool:
        caller = Caller(pool, store, run_id)
        for spec in (f"single:{names[0]}", f"workflow:vote:models={','.join(names)}"):
            await run_policy(build_coordinator(spec, config), tasks, ReplayGrader(), caller)
    store.finish_run(run_id, "finished")
    return store, run_id


@pytest.fixture
def driver() -> Iterator[WebDriver]:
    chrome = browser()
    try:
        yield chrome
    finally:
        chrome.quit()


async def test_viewer_pages_in_headless_chromium(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    tmp_path: Path,
    driver: WebDriver,
) -> None:
    store, run_id = await populated_store(replay_data, replay_server.base_url, tmp_path / "t.db")
    port = free_port()
    with app_in_thread(TraceViewer(store).app, port):
        driver.get(f"http://127.0.0.1:{port}/")
        (link,) = driver.find_elements(By.CSS_SELECTOR, "a.run")
        assert link.text == run_id
        link.click()
        policies = driver.find_elements(By.CSS_SELECTOR, "table.policies tr")
        assert len(policies) == 3  # header + the two policies
        assert "workflow:vote" in policies[2].text or "workflow:vote" in policies[1].text
        for image_id in ("accuracy", "routing"):
            image = driver.find_element(By.ID, image_id)
            assert driver.execute_script("return arguments[0].naturalWidth", image) > 100
            shot = picture(image.screenshot_as_png)
            colours = {tuple(p) for p in (shot[..., :3] * 255).astype(int).reshape(-1, 3)}
            assert len(colours) > 20, image_id  # a drawn plot, not an empty box
        page = picture(driver.get_screenshot_as_png())
        assert page.shape[1] >= 1000 and page[..., :3].std() > 0.05
        (tmp_path / "run.png").write_bytes(driver.get_screenshot_as_png())
        vote_task = next(
            row.find_element(By.CSS_SELECTOR, "a.task")
            for row in driver.find_elements(By.CSS_SELECTOR, "table.tasks tr")[1:]
            if "workflow:vote" in row.text
        )
        task_id = vote_task.text
        vote_task.click()
        calls = driver.find_elements(By.CSS_SELECTOR, "#timeline div.call")
        recorded = [
            c for c in store.task_calls(run_id, task_id) if c["policy"].startswith("workflow:vote")
        ]
        assert len(calls) == len(recorded) == 4  # three voters and the judge, this policy only
        assert [c.get_attribute("data-model") for c in calls] == [c["model"] for c in recorded]
        assert (recorded[-1]["response"] or "")[:40] in calls[-1].text
        assert driver.find_element(By.ID, "timeline").screenshot_as_png[:4] == b"\x89PNG"


async def test_viewer_pages_long_runs_and_answers_404_for_unknown_ones(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    from starlette.testclient import TestClient

    store, run_id = await populated_store(replay_data, replay_server.base_url, tmp_path / "t.db")
    total = len(list(store.iter_results(run_id)))  # 8 tasks x 2 policies
    with TestClient(TraceViewer(store, max_tasks=5).app) as client:
        first = client.get(f"/runs/{run_id}")
        assert first.status_code == 200 and first.text.count("class='task'") == 5
        assert f"showing 1–5 of {total}" in first.text and "?page=2" in first.text
        assert "pooled over all of a policy's tasks" in first.text
        last_page = -(-total // 5)
        last = client.get(f"/runs/{run_id}?page={last_page}")
        shown = total - 5 * (last_page - 1)
        assert last.text.count("class='task'") == shown and "class='next'" not in last.text
        assert f"showing {5 * (last_page - 1) + 1}–{total} of {total}" in last.text
        assert client.get("/runs/no-such-run").status_code == 404
        assert client.get(f"/runs/{run_id}/tasks/no-such-task").status_code == 404


def test_routing_plot_keeps_every_legend_entry() -> None:
    from consortium.viewer.app import _routing_png

    def size(pairs: int) -> tuple[int, int]:
        routing = {d: {f"model-{p} · worker": p + 1 for p in range(pairs)} for d in ("a", "b")}
        shape = picture(_routing_png({"routing": routing})).shape
        return shape[0], shape[1]

    few, many = size(3), size(54)  # 18 models x 3 roles
    assert many[1] > few[1] + 200  # the legend's extra columns are in the image, not cut off
    assert many[0] >= few[0]
