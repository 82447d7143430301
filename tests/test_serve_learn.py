"""`serve --learn`: served requests become records, feedback labels them (or is refused with one
line), a guarded refit adopts a better team and swaps it in, flipped labels are refused by the
guard, swaps under 16 clients drop nothing, and a `kill -9` loses no acknowledged label. All over
the HTTP replay server of a DATE records folder (the cheapest model, Llama-2-13B, answers half
of the questions right; gpt-4 nine in ten)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from consortium.coord.answers.folder import load_answer_policy, read_policy, write_policy
from consortium.demo.serve_learns.singles import single_policy
from consortium.pool import Pool
from consortium.pool.config import load_pool
from consortium.records import load_records
from consortium.records.grading import grade_date
from consortium.records.split import split_of
from consortium.replay.launch import ReplayServerProcess
from consortium.runtime.caller import Caller
from consortium.serve.learn import versions
from consortium.serve.learn.explore import Exploration
from consortium.serve.learn.learner import Learner
from consortium.serve.learn.settings import LearnSettings
from consortium.serve.learn.store import Label, TrafficStore
from consortium.serve.server import EnsembleServer
from tests.helpers import SharedRecords
from tests.test_cli import cli, one_line_error
from tests.test_serve import serve_process

QUESTIONS = 240


@pytest.fixture(scope="module")
def records(shared_records: SharedRecords) -> Path:
    return shared_records("date", QUESTIONS)


@pytest.fixture(scope="module")
def replay(records: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    pool_file = tmp_path_factory.mktemp("pool") / "replay.toml"
    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[records]):
        yield pool_file


@pytest.fixture(scope="module")
def cheapest(records: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("policies") / "cheapest"
    write_policy(folder, single_policy(records, "cheapest"))
    return folder


def _train_questions(records: Path) -> list[tuple[str, str]]:
    """(question, reference) of the train split, in the records' order."""
    seen: dict[str, tuple[str, str]] = {}
    for row in load_records(records).table.to_pylist():
        seen.setdefault(row["question_id"], (row["question"], row["reference"]))
    return [pair for qid, pair in seen.items() if split_of("date", qid) == "train"]


def _ask(url: str, question: str) -> httpx.Response:
    body = {"model": "consortium", "messages": [{"role": "user", "content": question}]}
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply


def _label(url: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{url}/feedback", json=body, timeout=60)


def _wait_for_refits(url: str, count: int) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        policy = httpx.get(f"{url}/policy", timeout=10).json()
        if len(policy["refits"]) >= count:
            return dict(policy)
        time.sleep(0.2)
    raise AssertionError(f"fewer than {count} refits in 120 s")


def test_feedback_is_taken_once_and_refused_with_one_line_otherwise(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    learn = tmp_path / "learn"
    (question, reference), (other, _) = _train_questions(records)[:2]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--explore", "1")
    with serve_process(replay, tmp_path / "t.db", *args, "--explore-budget", "1", "1") as server:
        url = f"{server.root}/v1"
        reply = _ask(url, question)
        answer_id = reply.json()["id"]
        assert reply.headers["x-consortium-policy-version"] == "v0"
        assert reply.headers["x-consortium-explored"] == "1"
        assert reply.json()["consortium"]["policy_version"] == "v0"
        unlabelled = _ask(url, other).json()["id"]
        cases = [
            ({"id": "chatcmpl-never", "correct": True}, 404, "unknown response id"),
            ({"id": answer_id, "reference": "no date here"}, 400, "cannot read the reference"),
            ({"id": answer_id}, 400, "give one of correct or reference"),
            ({"id": answer_id, "correct": "yes"}, 400, "correct must be true or false"),
        ]
        for body, status, message in cases:
            refused = _label(url, **body)
            assert refused.status_code == status, refused.text
            assert message in refused.json()["error"]["message"]
        assert httpx.get(f"{url}/policy").json()["labelled"] == 0  # nothing changed
        assert _label(url, id=answer_id, reference=reference).status_code == 200
        again = _label(url, id=answer_id, correct=False)
        assert again.status_code == 409 and "already has feedback" in again.text
        assert httpx.get(f"{url}/policy").json()["labelled"] == 1
    bulk = tmp_path / "labels.jsonl"
    lines = [{"id": answer_id, "reference": reference}, {"id": "chatcmpl-never", "reference": "x"}]
    lines.append({"id": unlabelled, "correct": True})
    bulk.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    imported = cli("feedback", "import", str(bulk), "--learn", str(learn))
    assert imported.returncode == 1
    assert "1 labels taken, 2 refused" in imported.stdout
    assert f"{bulk}:1: response {answer_id!r} already has feedback" in imported.stderr
    assert f"{bulk}:2: unknown response id 'chatcmpl-never'" in imported.stderr
    listed = cli("traces", "feedback", "--learn", str(learn))
    assert listed.returncode == 0, listed.stderr
    assert answer_id in listed.stdout and unlabelled in listed.stdout
    assert f"reference {reference}" in listed.stdout and "right" in listed.stdout


def _stream(url: str, question: str) -> tuple[httpx.Headers, list[dict[str, Any]]]:
    """A streamed answer: its headers and its chunks."""
    body = {"model": "consortium", "stream": True,
            "messages": [{"role": "user", "content": question}]}  # fmt: skip
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=60) as reply:
        assert reply.status_code == 200
        events = [line.removeprefix("data: ") for line in reply.iter_lines() if line]
    assert events[-1] == "[DONE]"
    return reply.headers, [json.loads(event) for event in events[:-1]]


def test_a_streamed_answer_is_recorded_explored_and_takes_feedback(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    learn = tmp_path / "learn"
    question, reference = _train_questions(records)[0]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--explore", "1")
    with serve_process(replay, tmp_path / "t.db", *args) as server:
        url = f"{server.root}/v1"
        headers, chunks = _stream(url, question)
        assert headers["x-consortium-policy-version"] == "v0"
        assert headers["x-consortium-explored"] == "1"
        assert chunks[-1]["consortium"]["policy_version"] == "v0"
        streamed_id = chunks[0]["id"]
        assert {chunk["id"] for chunk in chunks} == {streamed_id}
        label = _label(url, id=streamed_id, reference=reference)
        assert label.status_code == 200, label.text
    store = TrafficStore(f"sqlite:///{learn / 'traffic.db'}")
    try:
        [(request, taken, calls)] = store.labelled()
    finally:
        store.close()
    answer = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks)
    assert request["response_id"] == streamed_id and request["explored"]
    assert request["answer"] == answer and request["version"] == "v0"
    assert taken.reference == reference
    served = [call["model"] for call in calls if not call["shadow"]]
    assert served == ["Llama-2-13B"]
    shadow = {call["model"] for call in calls if call["shadow"]}
    assert shadow == set(load_pool(replay).names) - {"Llama-2-13B"}


def test_explore_on_label_explores_the_labelled_requests_only_and_counts_them_after(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    """`--explore-on label`: no answer says explored; a labelled request gets every other pool
    model's shadow call (so a refit can use it) before its label counts; an unlabelled one none."""
    learn = tmp_path / "learn"
    (first, reference), (second, _) = _train_questions(records)[:2]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--explore", "1",
            "--explore-on", "label", "--refit-every", "1")  # fmt: skip
    with serve_process(replay, tmp_path / "t.db", *args) as server:
        url = f"{server.root}/v1"
        replies = [_ask(url, question) for question in (first, second)]
        assert all("x-consortium-explored" not in reply.headers for reply in replies)
        labelled_id, unlabelled_id = (reply.json()["id"] for reply in replies)
        assert _label(url, id=labelled_id, reference=reference).status_code == 200
        policy = _wait_for_refits(url, 1)  # counted once its shadow calls were written
        assert policy["explore_spent_usd"] > 0
    store = TrafficStore(f"sqlite:///{learn / 'traffic.db'}")
    try:
        [(request, _, calls)] = store.labelled()
        assert store.models_asked(unlabelled_id) == ["Llama-2-13B"]
        unlabelled = store.request(unlabelled_id)
    finally:
        store.close()
    assert request["response_id"] == labelled_id and request["explored"]
    assert unlabelled is not None and not unlabelled["explored"]
    shadow = {call["model"] for call in calls if call["shadow"]}
    assert shadow == set(load_pool(replay).names) - {"Llama-2-13B"}
    assert policy["refits"][0]["reason"] != "no labelled request sampled every model"


def test_an_exploration_cap_reached_stays_reached_after_a_restart(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    learn = tmp_path / "learn"
    (first, _), (second, _) = _train_questions(records)[:2]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--explore", "1",
            "--explore-budget", "100", "0.000001")  # fmt: skip
    with serve_process(replay, tmp_path / "t.db", *args) as server:
        url = f"{server.root}/v1"
        assert _ask(url, first).headers["x-consortium-explored"] == "1"
        spent = _wait_for_spent(url)
        assert "x-consortium-explored" not in _ask(url, second).headers
    with serve_process(replay, tmp_path / "t.db", *args) as server:  # the same DIR
        url = f"{server.root}/v1"
        assert httpx.get(f"{url}/policy").json()["explore_spent_usd"] == pytest.approx(spent)
        replies = [_ask(url, question) for question in (first, second)]
        assert all("x-consortium-explored" not in reply.headers for reply in replies)
        assert all("explored" not in reply.json()["consortium"] for reply in replies)


def _wait_for_spent(url: str) -> float:
    """The shadow $ once the explored request's shadow calls are charged."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        spent = float(httpx.get(f"{url}/policy", timeout=10).json()["explore_spent_usd"])
        if spent > 0:
            return spent
        time.sleep(0.1)
    raise AssertionError("no shadow $ charged in 60 s")


def test_labels_imported_while_serving_start_a_refit(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    learn = tmp_path / "learn"
    pairs = _train_questions(records)[:3]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--refit-every", "3")
    with serve_process(replay, tmp_path / "t.db", *args) as server:
        url = f"{server.root}/v1"
        ids = [_ask(url, question).json()["id"] for question, _ in pairs]
        bulk = tmp_path / "labels.jsonl"
        lines = [{"id": id_, "reference": ref} for id_, (_, ref) in zip(ids, pairs, strict=True)]
        bulk.write_text("".join(json.dumps(line) + "\n" for line in lines))
        imported = cli("feedback", "import", str(bulk), "--learn", str(learn))
        assert imported.returncode == 0, imported.stderr
        policy = _wait_for_refits(url, 1)  # no POST /v1/feedback
    assert policy["labelled"] == 3 and policy["refits"][0]["labelled"] == 3


def _in_process_learner(settings: LearnSettings, store: Path, policy: Path) -> Learner:
    """A learner without a server, on the SQLite store `store`, serving `policy` as v0 (the
    cheapest model alone: nothing to explore)."""
    return Learner(settings, f"sqlite:///{store}", str(policy), "v0", ["Llama-2-13B"],
                   lambda spec: load_answer_policy(Path(spec)), lambda line: None)  # fmt: skip


def test_labels_another_learner_refitted_on_start_no_second_refit(
    cheapest: Path, records: Path, tmp_path: Path
) -> None:
    """Two learners on one DIR and store (replicas): the second counts the first's labels when
    it looks in DIR, and refits only on labels no refit counted yet."""
    settings = LearnSettings(tmp_path / "learn", refit_every=2, follow_every=0)
    pairs = _train_questions(records)[:4]

    def learner() -> Learner:
        return _in_process_learner(settings, tmp_path / "traffic.db", cheapest)

    async def label(by: Learner, pairs: list[tuple[str, str]]) -> None:
        for question, reference in pairs:
            by.served(question, question, "", None, "v0", False, [])
            await by.feedback(Label(question, None, reference))

    async def run() -> tuple[Learner, Learner, Learner]:
        first, second = learner(), learner()
        await label(first, pairs[:2])  # due at 2 labels: the first refits
        await first.aclose()
        second.follow()  # sees 2 labels: due, but refitted on already
        await second.aclose()
        third = learner()
        await label(third, pairs[2:])  # 4 labels: due, and new
        await third.aclose()
        return first, second, third

    first, second, third = asyncio.run(run())
    assert [refit["labelled"] for refit in first.refits] == [2]
    assert second.labelled == 2 and second.refits == []
    assert [refit["labelled"] for refit in third.refits] == [4]
    assert sorted(path.name for path in (settings.folder / "refits").iterdir()) == [
        "r000002", "r000004",
    ]  # fmt: skip


def test_labels_that_came_during_a_refit_start_the_next_when_it_ends(
    cheapest: Path, records: Path, tmp_path: Path
) -> None:
    """Labels arriving while a refit runs are not lost to it: when it ends, they start the next
    refit at once, though no label comes after them (the end of a stream)."""
    settings = LearnSettings(tmp_path / "learn", refit_every=2, follow_every=3600)
    learner = _in_process_learner(settings, tmp_path / "traffic.db", cheapest)
    pairs = _train_questions(records)[:5]
    labelled_all = threading.Event()
    refit = learner._refit_blocking

    def held_refit(labelled: int) -> Any:
        labelled_all.wait(60)  # the first refit runs until every label came
        return refit(labelled)

    learner._refit_blocking = held_refit  # type: ignore[method-assign]

    async def run() -> None:
        for question, reference in pairs:  # the first refit starts at 2; 3 more come meanwhile
            learner.served(question, question, "", None, "v0", False, [])
            await learner.feedback(Label(question, None, reference))
        labelled_all.set()
        await learner.aclose()

    asyncio.run(run())
    assert [refit["labelled"] for refit in learner.refits] == [2, 5]


def _serve_traffic(url: str, pairs: list[tuple[str, str]], flip: bool) -> list[str]:
    """Ask each question and label it with its reference, or (`flip`) with the opposite of the
    verdict its answer deserves; the versions that answered, in order."""
    answered = []
    for question, reference in pairs:
        reply = _ask(url, question)
        answered.append(reply.headers["x-consortium-policy-version"])
        text = reply.json()["choices"][0]["message"]["content"]
        if flip:
            right = bool(grade_date(reference, text).correct)
            label = _label(url, id=reply.json()["id"], correct=not right)
        else:
            label = _label(url, id=reply.json()["id"], reference=reference)
        assert label.status_code == 200, label.text
    return answered


def test_a_refit_adopts_a_better_team_and_a_kill_9_keeps_it_and_every_label(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    learn = tmp_path / "learn"
    pairs = _train_questions(records)[:60]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--refit-every", "30")
    with serve_process(replay, tmp_path / "t.db", *args, "--explore", "1") as server:
        url = f"{server.root}/v1"
        first = _serve_traffic(url, pairs[:30], flip=False)
        policy = _wait_for_refits(url, 1)
        assert policy["refits"][0]["adopted"] == "v1", policy["refits"]
        assert policy["version"] == "v1" and policy["adopted"] == ["v1"]
        later = _serve_traffic(url, pairs[30:], flip=False)
        os.kill(server.process.pid, signal.SIGKILL)
        assert server.process.process is not None
        server.process.process.wait()
    assert set(first) == {"v0"} and set(later) == {"v1"}
    evidence = json.loads((learn / "policies/v1/evidence.json").read_text())
    assert evidence["replaces"] == "v0" and evidence["reason"].startswith("more accurate")
    assert evidence["evidence"]["candidate_accuracy"] > evidence["evidence"]["incumbent_accuracy"]
    adopted = json.loads((learn / "policies/v1/policy.json").read_text())
    assert adopted["models"] != ["Llama-2-13B"]
    with serve_process(replay, tmp_path / "t.db", *args) as server:  # the same DIR
        url = f"{server.root}/v1"
        policy = httpx.get(f"{url}/policy").json()
        assert policy["version"] == "v1" and policy["labelled"] == 60
        assert _ask(url, pairs[0][0]).headers["x-consortium-policy-version"] == "v1"
    rollback = ("--policy", str(learn / "policies/v1"), "--learn", str(learn))
    with serve_process(replay, tmp_path / "t.db", *rollback) as server:
        assert httpx.get(f"{server.root}/v1/policy").json()["version"] == "v1"
    start = learn / "policies/start"  # the start policy, kept when the first server began
    assert json.loads((start / "policy.json").read_text())["models"] == ["Llama-2-13B"]
    with serve_process(
        replay, tmp_path / "t.db", "--policy", str(start), "--learn", str(learn)
    ) as server:
        assert httpx.get(f"{server.root}/v1/policy").json()["version"] == "v0"
        assert _ask(f"{server.root}/v1", pairs[0][0]).headers["x-consortium-policy-version"] == "v0"


def test_flipped_labels_are_refused_by_the_guard(
    replay: Path, cheapest: Path, records: Path, tmp_path: Path
) -> None:
    learn = tmp_path / "learn"
    pairs = _train_questions(records)[:60]
    args = ("--policy", str(cheapest), "--learn", str(learn), "--refit-every", "30")
    with serve_process(replay, tmp_path / "t.db", *args, "--explore", "1") as server:
        url = f"{server.root}/v1"
        answered = _serve_traffic(url, pairs, flip=True)
        policy = _wait_for_refits(url, 2)
    assert set(answered) == {"v0"} and policy["version"] == "v0" and policy["adopted"] == []
    assert all(refit["adopted"] is None for refit in policy["refits"]), policy["refits"]
    assert versions.adopted(learn) == [] and versions.latest(learn) is None


def test_five_swaps_under_16_clients_drop_nothing_and_each_answer_names_its_version(
    replay: Path, records: Path, tmp_path: Path
) -> None:
    """Versions v1..v5 alternate single models, so an answer's model tells which policy
    answered: it must be the one the answer's version names."""
    models = ["Llama-2-13B", "gpt-3.5-turbo", "gpt-4", "Llama-2-13B", "gpt-3.5-turbo", "gpt-4"]
    folders = []
    for index, model in enumerate(models):
        folder = tmp_path / f"single-{index}"
        write_policy(folder, single_policy(records, model))
        folders.append(folder)
    config = load_pool(replay)
    learner = Learner(
        LearnSettings(tmp_path / "learn"), f"sqlite:///{tmp_path / 'traffic.db'}",
        str(folders[0]), "v0", config.names, lambda spec: load_answer_policy(Path(spec)),
        lambda line: None,
    )  # fmt: skip
    server = EnsembleServer(learner.coordinator, Caller(Pool(config), None, "run"), learner=learner)
    questions = [question for question, _ in _train_questions(records)]
    answered = [0]

    async def client(http: httpx.AsyncClient, offset: int) -> list[tuple[str, str]]:
        said = []
        for index in range(offset, offset + 12):
            question = questions[index % len(questions)]
            body = {"model": "consortium", "messages": [{"role": "user", "content": question}]}
            reply = await http.post("/v1/chat/completions", json=body)
            assert reply.status_code == 200, reply.text
            said.append((reply.headers["x-consortium-policy-version"],
                         reply.headers["x-consortium-answered-by"]))  # fmt: skip
            answered[0] += 1
        return said

    async def swaps() -> None:
        """One swap every 30 answers, while the clients are still asking."""
        for version in range(1, 6):
            while answered[0] < 30 * version:
                await asyncio.sleep(0.001)
            learner.on_adopt(load_answer_policy(folders[version]), f"v{version}")

    async def run() -> list[tuple[str, str]]:
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as http:
            swapping = asyncio.create_task(swaps())
            said = await asyncio.gather(*(client(http, 12 * i) for i in range(16)))
            await swapping
        await learner.aclose()
        return [pair for per_client in said for pair in per_client]

    said = asyncio.run(run())
    assert len(said) == 16 * 12
    assert all(answered == models[int(version[1:])] for version, answered in said), said
    assert {version for version, _ in said} >= {"v0", "v5"}
    assert _served_count(tmp_path / "traffic.db") == 16 * 12  # every request recorded


def _served_count(path: Path) -> int:
    from sqlalchemy import create_engine, func, select

    from consortium.serve.learn.tables import served

    with create_engine(f"sqlite:///{path}").connect() as db:
        return int(db.execute(select(func.count()).select_from(served)).scalar_one())


def test_exploration_is_seeded_and_stops_at_its_caps() -> None:
    now = [0.0]
    first = Exploration(0.5, per_hour=1.0, total=None, seed=3, clock=lambda: now[0])
    second = Exploration(0.5, per_hour=1.0, total=None, seed=3, clock=lambda: now[0])
    draws = [first.chosen() for _ in range(40)]
    assert draws == [second.chosen() for _ in range(40)] and 5 < sum(draws) < 35
    first.charge(1.0)  # the hour's cap reached
    assert not any(first.chosen() for _ in range(40))
    now[0] = 3601.0  # an hour later the cap frees again
    assert any(first.chosen() for _ in range(40))
    restarted = Exploration(1.0, per_hour=0.5, total=None, seed=0, clock=lambda: now[0])
    restarted.take_up(1.0, [(600.0, 0.4), (60.0, 0.6)])  # spent 10 and 1 minutes ago
    assert not restarted.chosen() and restarted.spent == 1.0
    now[0] += 3010.0  # the older $ left the hour, the newer not yet
    assert not restarted.chosen()
    now[0] += 540.0  # and the newer too
    assert restarted.chosen()
    capped = Exploration(1.0, per_hour=None, total=0.5, seed=0)
    assert capped.chosen()
    capped.charge(0.5)
    assert not any(capped.chosen() for _ in range(10))


def test_learning_needs_an_answer_aware_folder_to_start_from(replay: Path, tmp_path: Path) -> None:
    traces = f"sqlite:///{tmp_path}/t.db"
    refused = cli("serve", "--pool", str(replay), "--policy", "single:gpt-4",
                  "--learn", str(tmp_path / "learn"), "--traces", traces)  # fmt: skip
    one_line_error(refused, "--learn refits answer-aware policy folders; --policy single:gpt-4")


def test_the_start_policy_is_kept_whole_and_replaced_only_by_another(
    records: Path, tmp_path: Path
) -> None:
    cheapest_policy, dearer = (single_policy(records, which) for which in ("cheapest", "gpt-4"))
    versions.write_start(tmp_path, cheapest_policy)
    kept = versions.start_folder(tmp_path) / "policy.json"
    first = kept.stat().st_ino
    versions.write_start(tmp_path, cheapest_policy)  # the same policy (a restart, a replica)
    assert kept.stat().st_ino == first
    versions.write_start(tmp_path, dearer)
    assert read_policy(kept.parent).models == ["gpt-4"]
    assert [p.name for p in versions.policies_dir(tmp_path).iterdir()] == ["start"]
    assert versions.version_of(str(kept.parent), tmp_path) == "v0"
    assert versions.adopted(tmp_path) == [] and versions.latest(tmp_path) is None
