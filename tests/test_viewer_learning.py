"""The viewer's learning page (`consortium traces view --learn DIR`) over a real `serve --learn`
run on the HTTP replay of a DATE records folder (as in test_serve_learn): 30 requests labelled
with their references adopt v1, then 40 more with flipped labels are judged at the next refit.
The page shows each version with its evidence, each refused refit with its reason, and windows
of served requests whose counts, accuracy and $ are the traffic store's."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from consortium.records.grading import grade_date
from consortium.runtime.store import TraceStore
from consortium.serve.learn.history import WINDOW
from consortium.viewer.app import TraceViewer
from consortium.viewer.charts import tick_label
from tests.test_cli import cli, one_line_error
from tests.test_serve import serve_process
from tests.test_serve_learn import (  # noqa: F401 (the fixtures)
    _ask,
    _label,
    _train_questions,
    _wait_for_refits,
    cheapest,
    records,
    replay,
)

TRUE_LABELS, FLIPPED_LABELS = 30, 40


@dataclass(frozen=True)
class Learned:
    folder: Path
    traces: Path
    versions: list[str]
    """The version that answered each request, in the order asked."""
    right: list[bool]
    """Whether each request's label says its answer was right."""
    refits: list[dict[str, Any]]


def _ask_and_label(url: str, question: str, reference: str, flip: bool) -> tuple[str, bool]:
    reply = _ask(url, question)
    text = reply.json()["choices"][0]["message"]["content"]
    right = bool(grade_date(reference, text).correct)
    if flip:
        label = _label(url, id=reply.json()["id"], correct=not right)
    else:
        label = _label(url, id=reply.json()["id"], reference=reference)
    assert label.status_code == 200, label.text
    return reply.headers["x-consortium-policy-version"], right != flip


@pytest.fixture(scope="module")
def learned(
    replay: Path,  # noqa: F811
    cheapest: Path,  # noqa: F811
    records: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Learned:
    root = tmp_path_factory.mktemp("learned")
    folder, traces = root / "learn", root / "t.db"
    pairs = _train_questions(records)[: TRUE_LABELS + FLIPPED_LABELS]
    args = ("--policy", str(cheapest), "--learn", str(folder), "--refit-every", "30")
    answered: list[tuple[str, bool]] = []
    with serve_process(replay, traces, *args, "--explore", "1") as server:
        url = f"{server.root}/v1"
        for index, (question, reference) in enumerate(pairs):
            answered.append(_ask_and_label(url, question, reference, index >= TRUE_LABELS))
            if index + 1 == TRUE_LABELS:
                _wait_for_refits(url, 1)
        refits = _wait_for_refits(url, 2)["refits"]
    assert refits[0]["adopted"] == "v1", refits
    return Learned(folder, traces, [v for v, _ in answered], [r for _, r in answered], refits)


def _page(learned: Learned, path: str) -> str:
    store = TraceStore(f"sqlite:///{learned.traces}")
    with TestClient(TraceViewer(store, learn=learned.folder).app) as client:
        reply = client.get(path)
    store.close()
    assert reply.status_code == 200, reply.text
    return reply.text


def _rows(page: str, css: str) -> list[list[str]]:
    """The cells of each body row of the page's table of class `css`, tags stripped."""
    found = re.search(rf"<table class='{css}'>(.*?)</table>", page)
    assert found is not None, f"no table {css}"
    rows = re.findall(r"<tr>(.*?)</tr>", found.group(1))[1:]
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in rows
    ]


def test_the_runs_list_links_the_learning_page(learned: Learned) -> None:
    assert "href='/learning'" in _page(learned, "/")


def test_the_page_shows_v1_with_the_evidence_it_was_adopted_on(learned: Learned) -> None:
    page = _page(learned, "/learning")
    versions = {row[0]: row for row in _rows(page, "versions")}
    assert set(versions) >= {"v0", "v1"}
    first_v1 = learned.versions.index("v1") + 1
    assert first_v1 == TRUE_LABELS + 1  # the refit was waited for before the next request
    evidence = _read_evidence(learned.folder / "policies/v1/evidence.json")
    v1 = versions["v1"]
    assert v1[1:3] == [str(TRUE_LABELS), str(first_v1)]  # adopted at 30 labels, first request 31
    assert v1[5] == "v0"
    figures = evidence["evidence"]
    assert v1[6:9] == [
        str(figures["tasks"]),
        f"{100 * figures['candidate_accuracy']:.1f}",
        f"{100 * figures['incumbent_accuracy']:.1f}",
    ]
    assert v1[9:11] == [f"{figures['candidate_cost']:.6f}", f"{figures['incumbent_cost']:.6f}"]
    assert v1[12] == evidence["reason"] and v1[4] == evidence["candidate"]
    assert versions["v0"][4] == evidence["incumbent"] and versions["v0"][2] == "1"
    refused = [r for r in learned.refits if r["adopted"] is None]
    # the flipped labels' refit is refused on most splits (the split hashes random response ids)
    shown = _rows(page, "refused") if refused else []
    assert ("id='no-refused'" in page) == (not refused)
    assert [(row[0], row[-1]) for row in shown] == [
        (str(r["labelled"]), r["reason"]) for r in refused
    ]
    adopted = {r["adopted"] for r in learned.refits if r["adopted"]}
    assert adopted <= set(versions)


def _read_evidence(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_the_windows_counts_are_the_traffic_stores(learned: Learned) -> None:
    page = _page(learned, "/learning")
    with sqlite3.connect(learned.folder / "traffic.db") as db:
        ids = [
            r[0] for r in db.execute("SELECT response_id FROM learn_requests ORDER BY created_at")
        ]
        labelled = {r[0] for r in db.execute("SELECT response_id FROM learn_feedback")}
        cost = dict(
            db.execute(
                "SELECT response_id, SUM(cost_usd) FROM learn_outputs WHERE NOT shadow "
                "GROUP BY response_id"
            ).fetchall()
        )
    served = len(learned.versions)
    assert len(ids) == served and labelled == set(ids)
    expected = []
    for first in range(0, served, WINDOW):
        window = ids[first : first + WINDOW]
        right = learned.right[first : first + WINDOW]
        expected.append(
            [
                f"{first + 1}–{first + len(window)}",
                str(len(window)),
                str(len(labelled & set(window))),
                str(sum(right)),
                f"{100 * sum(right) / len(window):.1f}",
                f"{sum(cost.get(i, 0.0) for i in window) / len(window):.6f}",
            ]
        )
    rows = _rows(page, "windows")
    assert [row[:6] for row in rows] == expected
    versions = [
        ", ".join(dict.fromkeys(learned.versions[f : f + WINDOW])) for f in range(0, served, WINDOW)
    ]
    assert [row[7] for row in rows] == versions
    accuracy = re.search(r"<svg id='learning-accuracy'.*?</svg>", page)
    assert accuracy is not None
    assert accuracy.group(0).count("class='window'") == len(expected)
    marked = re.findall(r"class='adoption' data-version='(v\d+)'", accuracy.group(0))
    assert marked == [v for v in dict.fromkeys(learned.versions) if v != "v0"]


def test_view_refuses_a_folder_that_is_not_a_learning_servers(tmp_path: Path) -> None:
    one_line_error(cli("traces", "view", "--learn", str(tmp_path)), "not a folder of serve --learn")


def test_the_learning_page_without_a_folder_says_how_to_get_one(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path / 't.db'}")
    with TestClient(TraceViewer(store).app) as client:
        reply = client.get("/learning")
    store.close()
    assert reply.status_code == 404 and "--learn DIR" in reply.text


def test_axis_ticks_keep_their_zeros_before_the_point() -> None:
    # the accuracy axis runs to 100 and the $ axis to small fractions: both read as written
    labels = [tick_label(v, "cost") for v in (0, 10, 100, 5e-05, 0.00015, 1.5)]
    assert labels == ["0", "10", "100", "0.00005", "0.00015", "1.5"]
