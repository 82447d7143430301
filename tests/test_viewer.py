"""The trace viewer in a real headless Chromium (Debian's chromium + chromedriver, Selenium), over
a real evaluation on the replay pool (tests/viewer_showcase.py), and its queries on a run of
synthetic rows (bench/viewer_pages.py)."""

from __future__ import annotations

import asyncio
import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from consortium.replay.data import ReplayData
from consortium.replay.launch import ReplayServerProcess, free_port
from consortium.runtime.store import TraceStore
from consortium.viewer.app import TraceViewer
from tests.scripted_server import app_in_thread, scripted_server
from tests.viewer_showcase import conductor_script, showcase_run

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
TASKS_PER_DATASET = 3
POLICIES = 7  # 3 single models, random, TRINITY, vote, conductor (tests/viewer_showcase.py)


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


def colours(element: WebElement) -> int:
    """How many distinct colours the element's own screenshot holds (a drawn chart has many)."""
    pixels: np.ndarray = imread(io.BytesIO(element.screenshot_as_png), format="png")
    return len({tuple(p) for p in (pixels[..., :3] * 255).astype(int).reshape(-1, 3)})


@pytest.fixture(scope="module")
def showcase(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TraceStore, str, str]]:
    """The showcase run, served by the viewer: (store, run id, viewer root URL)."""
    path = tmp_path_factory.mktemp("viewer") / "traces.db"
    with scripted_server({"conductor": conductor_script}) as boss:
        store, run_id = asyncio.run(
            showcase_run(replay_data, replay_server.base_url, boss.base_url, path, 3)
        )
    port = free_port()
    with app_in_thread(TraceViewer(store).app, port):
        yield store, run_id, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    chrome = browser()
    try:
        yield chrome
    finally:
        chrome.quit()


def test_run_page_shows_each_policys_choices(
    showcase: tuple[TraceStore, str, str], driver: WebDriver
) -> None:
    _, run_id, root = showcase
    driver.get(root + "/")
    (link,) = driver.find_elements(By.CSS_SELECTOR, "a.run")
    assert link.text == run_id
    link.click()
    assert len(driver.find_elements(By.CSS_SELECTOR, "table.policies tr")) == 1 + POLICIES
    selector = Select(driver.find_element(By.ID, "policy"))
    assert len(selector.options) == POLICIES
    # Opened on the first policy that is not a single model or random: the coordinator.
    assert selector.first_selected_option.text == "trinity (scripted)"
    rows = driver.find_elements(By.CSS_SELECTOR, "table.choices tr")[1:]
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["gsm8k", "mmlu"]
    for row in rows:
        chosen = row.find_elements(By.CSS_SELECTOR, ".shares.chosen span")
        # TRINITY's scripted head: three models, each in its own role, a third of the calls each.
        assert sorted(s.get_attribute("data-role") for s in chosen) == [
            "thinker",
            "verifier",
            "worker",
        ]
        assert row.find_elements(By.CSS_SELECTOR, ".shares.best span")
        assert row.find_elements(By.CSS_SELECTOR, ".shares.oracle span")
        cells = row.find_elements(By.TAG_NAME, "td")
        assert cells[-3].text == "3.00"  # calls per task
        assert float(cells[-1].text) > 0  # $ per task
    assert "prompt +" in driver.find_element(By.ID, "selected-summary").text
    assert " alone: " in driver.find_element(By.ID, "versus").text
    assert colours(driver.find_element(By.CSS_SELECTOR, "table.choices")) > 8
    vote = next(o.text for o in selector.options if o.text.startswith("workflow:judge-vote"))
    selector.select_by_visible_text(vote)  # the form submits itself on change

    def vote_page_shown(driver: WebDriver) -> bool:
        # The new page loads after the change: until then the element is gone or stale.
        return Select(driver.find_element(By.ID, "policy")).first_selected_option.text == vote

    WebDriverWait(
        driver, 30, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
    ).until(vote_page_shown)
    shares = driver.find_elements(By.CSS_SELECTOR, "table.choices tr .shares.chosen span")
    assert {s.get_attribute("data-role") for s in shares} == {"worker"}
    # The judge is the first model and votes too: half of the vote's calls are its.
    titles = [s.get_attribute("title") or "" for s in shares]
    assert sum(": 50% " in t for t in titles) == 2  # one per dataset
    judge = vote.removeprefix("workflow:judge-vote:models=").split(",")[0]
    versus = driver.find_element(By.ID, "versus").text
    assert versus.startswith(f"It sends 50% of its calls to {judge}.")
    tasks = driver.find_elements(By.CSS_SELECTOR, "table.tasks a.task")
    assert len(tasks) == 2 * TASKS_PER_DATASET
    assert all("workflow%3Ajudge-vote" in (a.get_attribute("href") or "") for a in tasks)


def _task_page(driver: WebDriver, root: str, run_id: str, task_id: str, policy: str) -> None:
    from urllib.parse import quote

    driver.get(f"{root}/runs/{quote(run_id)}/tasks/{quote(task_id)}?policy={quote(policy)}")


def test_task_pages_show_transcripts_grades_and_workflows(
    showcase: tuple[TraceStore, str, str], driver: WebDriver
) -> None:
    store, run_id, root = showcase
    results = list(store.iter_results(run_id))
    task_id = results[0]["task_id"]
    by_policy = {r["policy"]: r for r in results if r["task_id"] == task_id}
    calls = store.task_calls(run_id, task_id)

    def recorded(policy: str) -> list[dict[str, object]]:
        return [c for c in calls if c["policy"] == policy]

    for policy, result in by_policy.items():
        _task_page(driver, root, run_id, task_id, policy)
        (section,) = driver.find_elements(By.CSS_SELECTOR, "section.policy")
        assert section.get_attribute("data-policy") == policy
        grade = section.find_element(By.CSS_SELECTOR, ".grade")
        assert grade.get_attribute("data-correct") == str(int(bool(result["correct"])))
        assert ("right" if result["correct"] else "wrong") in grade.text
        # the task's reference answer, beside the answer read
        reference = grade.find_element(By.CSS_SELECTOR, ".reference").text
        assert result["reference"] and reference == str(result["reference"])
        turns = section.find_elements(By.CSS_SELECTOR, ".transcript .turn")
        expected = recorded(policy)
        assert [t.get_attribute("data-model") for t in turns] == [c["model"] for c in expected]
        assert [t.get_attribute("data-role") for t in turns] == [
            c["role"] or "worker" for c in expected
        ]
        for turn, call in zip(turns, expected, strict=True):
            head = turn.find_element(By.CSS_SELECTOR, ".head").text
            assert f"{call['prompt_tokens']} in + {call['completion_tokens']} out" in head
            assert f"${call['cost']:.6f}" in head and " ms" in head
            answer = turn.find_element(By.CSS_SELECTOR, "pre.answer").text
            assert answer.strip() == str(call["response"]).strip()
        returned = section.find_elements(By.CSS_SELECTOR, ".turn.returned")
        assert len(returned) == 1 and all(
            r.find_element(By.CSS_SELECTOR, "pre.answer").text.strip()
            == (result["answer"] or "").strip()
            for r in returned
        )
        dags = section.find_elements(By.CSS_SELECTOR, "svg.dag")
        if policy.startswith("trinity"):
            assert [t.get_attribute("data-role") for t in turns] == [
                "thinker",
                "worker",
                "verifier",
            ]
            assert "verdict" in turns[2].text and not dags
            assert turns[1].find_elements(By.CSS_SELECTOR, ".extracted")
            assert not turns[0].find_elements(By.CSS_SELECTOR, ".extracted")  # a plan
        elif policy.startswith("workflow:judge-vote"):
            (dag,) = dags
            steps = dag.find_elements(By.CSS_SELECTOR, "g.step")
            access = [s.get_attribute("data-access") for s in steps]
            assert access == ["none", "none", "none", "0, 1, 2 (all)"]
            assert len(dag.find_elements(By.CSS_SELECTOR, ".edge")) == 3
            # The judge's reply is never the answer: a voter's text is returned.
            assert returned[0].get_attribute("data-model") in {c["model"] for c in expected}
            assert "returned as the answer" not in turns[-1].text
            assert colours(dag) > 4
        elif policy.startswith("conductor"):
            (dag,) = dags
            steps = dag.find_elements(By.CSS_SELECTOR, "g.step")
            access = [s.get_attribute("data-access") for s in steps]
            assert access == ["none", "0", "0, 1 (all)"]  # the plan's [[], [0], 'all']
            edges = {
                (e.get_attribute("data-from"), e.get_attribute("data-to"))
                for e in dag.find_elements(By.CSS_SELECTOR, ".edge")
            }
            assert edges == {("0", "1"), ("0", "2"), ("1", "2")}
            assert turns[0].get_attribute("data-role") == "conductor"
            assert "model_id" in turns[0].find_element(By.CSS_SELECTOR, "pre.answer").text
        else:
            assert len(turns) == 1 and not dags
    driver.get(f"{root}/runs/{run_id}/tasks/{task_id}")  # every policy on one page
    assert len(driver.find_elements(By.CSS_SELECTOR, "section.policy")) == POLICIES
    page = driver.find_element(By.ID, "timeline")
    assert colours(page) > 20


def test_frontier_page_plots_every_policy(
    showcase: tuple[TraceStore, str, str], driver: WebDriver
) -> None:
    _, run_id, root = showcase
    driver.get(f"{root}/runs/{run_id}")
    driver.find_element(By.ID, "frontier-link").click()
    plot = driver.find_element(By.ID, "frontier-plot")
    points = plot.find_elements(By.CSS_SELECTOR, ".point")
    assert len(points) == POLICIES
    assert len(plot.find_elements(By.CSS_SELECTOR, ".point.single")) == 3
    assert len(plot.find_elements(By.CSS_SELECTOR, ".ci")) == POLICIES
    on_line = driver.find_elements(By.XPATH, "//table[@class='frontier']//b[text()='yes']")
    assert on_line and (len(on_line) < 2 or plot.find_elements(By.CSS_SELECTOR, ".frontier"))
    assert "USD per task" in plot.text and not driver.find_elements(By.ID, "zero-cost")
    assert colours(plot) > 12


async def test_frontier_is_readable_when_every_policy_costs_nothing(
    replay_server: ReplayServerProcess,
    replay_data: ReplayData,
    tmp_path: Path,
    driver: WebDriver,
) -> None:
    """A pool without prices (local llama.cpp, or here the replay pool with its prices removed):
    the x axis falls back to tokens per task and the points stay apart."""
    from consortium.coord.baselines import SingleModel
    from consortium.coord.conductor.templates import WorkflowCoordinator, template
    from consortium.evaluation.runner import run_policy
    from consortium.pool import Pool
    from consortium.replay.pool import replay_pool
    from consortium.replay.tasks import ReplayGrader, load_replay_tasks
    from consortium.runtime.caller import Caller

    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:3])
    free = config.model_copy(
        update={"models": [m.model_copy(update={"price_in": 0.0, "price_out": 0.0})
                           for m in config.models]}
    )  # fmt: skip
    store = TraceStore(f"sqlite:///{tmp_path / 'free.db'}")
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=2).tasks
    with store.running("eval", pool="replay without prices") as run:
        async with Pool(free) as pool:
            caller = Caller(pool, store, run.run_id)
            coordinators = [SingleModel(n) for n in free.names]
            coordinators.append(WorkflowCoordinator(template("judge-vote", free.names), "vote"))
            for coordinator in coordinators:
                await run_policy(coordinator, tasks, ReplayGrader(), caller)
    port = free_port()
    with app_in_thread(TraceViewer(store).app, port):
        driver.get(f"http://127.0.0.1:{port}/runs/{run.run_id}/frontier")
        assert driver.find_element(By.ID, "zero-cost").is_displayed()
        plot = driver.find_element(By.ID, "frontier-plot")
        assert "tokens per task" in plot.text
        xs = [p.location["x"] for p in plot.find_elements(By.CSS_SELECTOR, ".point")]
        assert len(xs) == 4 and max(xs) - min(xs) > 100  # the vote's tokens set it apart
        assert colours(plot) > 8


def test_pages_are_paged_and_unknown_ones_answer_404(
    showcase: tuple[TraceStore, str, str],
) -> None:
    from starlette.testclient import TestClient

    store, run_id, _ = showcase
    total = 2 * TASKS_PER_DATASET
    with TestClient(TraceViewer(store, max_tasks=4).app) as client:
        first = client.get(f"/runs/{run_id}?policy=random")
        assert first.status_code == 200 and first.text.count("class='task'") == 4
        assert f"showing 1–4 of {total}" in first.text and "page=2" in first.text
        last = client.get(f"/runs/{run_id}?policy=random&page=2")
        assert last.text.count("class='task'") == total - 4 and "class='next'" not in last.text
        assert client.get("/runs/no-such-run").status_code == 404
        assert client.get("/runs/no-such-run/frontier").status_code == 404
        assert client.get(f"/runs/{run_id}/tasks/no-such-task").status_code == 404


async def test_a_run_without_results_lists_its_tasks_as_called(
    replay_server: ReplayServerProcess, replay_data: ReplayData, tmp_path: Path
) -> None:
    """`serve` and `ask` write calls but no graded results: the run page lists their tasks."""
    from starlette.testclient import TestClient

    from consortium.coord.baselines import SingleModel
    from consortium.pool import Pool
    from consortium.replay.pool import replay_pool
    from consortium.replay.tasks import load_replay_tasks
    from consortium.runtime.caller import Caller

    config = replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"][:1])
    store = TraceStore(f"sqlite:///{tmp_path / 'served.db'}")
    tasks = load_replay_tasks(replay_data, datasets=["gsm8k"], limit=3).tasks
    model = SingleModel(config.names[0])
    with store.running("serve", pool="replay") as run:
        async with Pool(config) as pool:
            caller = Caller(pool, store, run.run_id)
            for task in tasks:
                await model.run(task, caller.for_task(task.id, model.name))
    with TestClient(TraceViewer(store, max_tasks=2).app) as client:
        page = client.get(f"/runs/{run.run_id}")
        assert "No graded results in this run" in page.text and "showing 1–2 of 3" in page.text
        assert page.text.count("class='task'") == 2
        task = client.get(f"/runs/{run.run_id}/tasks/{tasks[0].id}")
        assert task.status_code == 200 and "no graded result" in task.text
        assert task.text.count("<div class='turn") == 1


def test_a_judge_repeating_a_voters_reply_is_not_marked_as_returning_it() -> None:
    """The store keeps the answer's text, not the call it came from: when a later call repeats
    it (a judge replayed with its own voter reply), the first call with that text is marked."""
    import re

    from consortium.viewer.html import Palette
    from consortium.viewer.transcript import policy_section

    def call(model: str, response: str, turn: int) -> dict[str, object]:
        return {
            "model": model,
            "role": "worker",
            "turn": turn,
            "response": response,
            "verdict": None,
            "prompt_tokens": 5,
            "completion_tokens": 5,
            "cost": 0.0,
            "latency": 0.01,
            "cached": False,
            "fallback_from": None,
            "error": None,
            "messages": "[]",
        }

    calls = [call("a", "The answer is 4.", 0), call("b", "The answer is 5.", 1)]
    calls.append(call("a", "The answer is 4.", 2))  # the judge, same model, same recorded reply
    result = {"answer": "The answer is 4.", "correct": True, "reference": "4", "detail": "ok"}
    result |= {"error": None, "cost": 0.0, "calls": 3, "score": 1.0, "dataset": "t", "tokens": 30}
    html = policy_section("workflow:judge-vote", calls, result, Palette(["a", "b"]))
    turns = html.split("<div class='turn")[1:]
    assert [bool(re.search("returned as the answer", t)) for t in turns] == [True, False, False]
    assert [t.startswith(" returned'") for t in turns] == [True, False, False]


def _call(model: str, response: str, turn: int) -> dict[str, object]:
    return {
        "model": model, "role": "worker", "turn": turn, "response": response, "verdict": None,
        "prompt_tokens": 5, "completion_tokens": 5, "cost": 0.0, "latency": 0.01,
        "cached": False, "fallback_from": None, "error": None, "messages": "[]",
    }  # fmt: skip


def _stage(stage: int, model: str, answer: str | None, chosen: bool) -> dict[str, object]:
    return {
        "stage": stage, "model": model, "sample": 0, "status": "answered" if answer else "unread",
        "answer": answer, "checked": None, "score": 0.46, "chosen": chosen,
        "decision": "stop: every stage asked: scorer p 0.46 < tau 0.80" if stage == 2 else "asked",
    }  # fmt: skip


def test_the_answer_read_is_the_policys_reading_not_the_whole_reply() -> None:
    """On a MATH task a cascade's reader took 400 from a boxed reply: the grade's "final answer
    read" and each call's "extracted answer" say what its reader took, not the reply lowercased;
    a reply whose answer only the grader reads (no stages, no "The answer is") shows none."""
    from consortium.viewer.html import Palette
    from consortium.viewer.transcript import policy_section

    boxed = "Counting: 20 Ways Each, so the Total is $\\boxed{400}$."
    calls = [_call("a", "No idea, Sorry.", 1), _call("b", boxed, 2)]
    stages = [_stage(1, "a", None, False), _stage(2, "b", "400", True)]
    result = {"answer": boxed, "correct": True, "reference": "400", "detail": "answer: 400"}
    result |= {"error": None, "cost": 0.0, "calls": 2, "score": 1.0, "dataset": "math"}
    result |= {"tokens": 20}
    html = policy_section("scorer-cascade:math", calls, result, Palette(["a", "b"]), stages)
    shown = r"(final answer read|extracted answer): <span class='extracted'>([^<]*)<"
    read = re.findall(shown, html)
    assert read == [
        ("final answer read", "400"),
        ("extracted answer", "none (the policy&#x27;s reader found no answer)"),
        ("extracted answer", "400"),
    ]
    single = policy_section("single:b", calls[1:], result, Palette(["b"]))
    assert "class='extracted'" not in single  # its grader's detail says what it read
    stated = policy_section("single:a", [_call("a", "So. The answer is 4.", 1)], None, Palette([]))
    assert "extracted answer: <span class='extracted'>4</span>" in stated


def test_the_run_page_shows_its_settings_as_a_table(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    settings = {"policies": ["single:a", "my-team"], "substitutes": {"gpt-4": "mine"}}
    run_id = store.start_run("eval", pool="p.toml", config={**settings, "concurrency": 32})
    with TestClient(TraceViewer(store).app) as client:
        page = client.get(f"/runs/{run_id}").text
    assert "<table class='settings'>" in page
    rows = re.findall(r"<tr><td>(\w+)</td><td><code>([^<]*)</code></td></tr>", page)
    assert rows == [("policies", "single:a, my-team"), ("substitutes", "gpt-4 = mine"),
                    ("concurrency", "32")]  # fmt: skip
    assert "{&quot;" not in page  # no JSON dump
