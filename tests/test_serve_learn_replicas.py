"""`serve --learn` replicas on one PostgreSQL store and one DIR: the store's refit lock admits
one refitting replica at a time, and a version one replica adopts is served by the other too.
Over the HTTP replay of a DATE records folder, as in test_serve_learn."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from consortium.runtime.pgserver import PostgresServer
from consortium.serve.learn.store import TrafficStore
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


def test_a_second_holder_of_the_refit_lock_is_refused_until_the_first_lets_go(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.create_database("refit_lock")
    first, second = TrafficStore(url), TrafficStore(url)
    try:
        with first.refit_lock() as held:
            assert held
            with second.refit_lock() as also:
                assert not also
        with second.refit_lock() as held_after:
            assert held_after
            with first.refit_lock() as refused:
                assert not refused
    finally:
        first.close()
        second.close()
    sqlite = TrafficStore(f"sqlite:///{tmp_path / 'traffic.db'}")  # one process: never refused
    with sqlite.refit_lock() as held, sqlite.refit_lock() as again:
        assert held and again
    sqlite.close()


def _version_of(url: str, deadline_s: float, want: str) -> str:
    """The version `url` serves once it is `want`, or the last one seen after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    version = ""
    while time.monotonic() < deadline:
        version = str(httpx.get(f"{url}/policy", timeout=10).json()["version"])
        if version == want:
            break
        time.sleep(0.5)
    return version


@pytest.mark.cluster
def test_two_replicas_on_postgres_refit_once_and_both_serve_the_adopted_version(
    replay: Path,  # noqa: F811
    cheapest: Path,  # noqa: F811
    records: Path,  # noqa: F811
    postgres_server: PostgresServer,
    tmp_path: Path,
) -> None:
    traces = postgres_server.create_database("replicas")
    learn = tmp_path / "learn"
    args = ("--policy", str(cheapest), "--learn", str(learn), "--refit-every", "30")
    shared = (*args, "--explore", "1", "--traces", traces)
    pairs = _train_questions(records)[:30]
    with (
        serve_process(replay, tmp_path / "a.db", *shared) as first,
        serve_process(replay, tmp_path / "b.db", *shared) as second,
    ):
        urls = [f"{first.root}/v1", f"{second.root}/v1"]
        for index, (question, reference) in enumerate(pairs):
            url = urls[index % 2]  # the traffic and its labels, shared between the two
            reply = _ask(url, question)
            assert reply.headers["x-consortium-policy-version"] == "v0"
            assert _label(url, id=reply.json()["id"], reference=reference).status_code == 200
        refitted = _wait_for_refits(urls[1], 1)  # the 30th label reached the second
        assert refitted["refits"][0]["adopted"] == "v1", refitted["refits"]
        assert refitted["labelled"] == 30  # every replica's labels count
        other = httpx.get(f"{urls[0]}/policy", timeout=10).json()
        assert other["refits"] == []  # only one replica refitted
        assert _version_of(urls[0], 30, "v1") == "v1"
        answered = [_ask(url, pairs[0][0]).headers["x-consortium-policy-version"] for url in urls]
    assert answered == ["v1", "v1"]
    # one version adopted, beside the start both replicas kept (no partial folder left)
    assert sorted(p.name for p in (learn / "policies").iterdir()) == ["start", "v1"]
