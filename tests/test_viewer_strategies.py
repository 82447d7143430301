"""An evolve run's policies are strategies named by a hash; the run page says what each stands for
(its plans in words), read from the strategy specs evolve stores beside the run."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from consortium.coord.strategy import Plan, Strategy
from consortium.evolve.library import StrategyLibrary
from consortium.runtime.store import TraceStore
from consortium.runtime.store_records import ResultRecord
from consortium.viewer.app import TraceViewer


def test_the_run_page_names_evolved_strategies_in_words(tmp_path: Path) -> None:
    store = TraceStore(f"sqlite:///{tmp_path / 'traces.db'}")
    strategy = Strategy(
        default=Plan(first="single:a"),
        clusters={"gsm8k": Plan(first="single:a", escalate="single:b", trigger="always")},
    )
    StrategyLibrary(store).record_round("evolve-1", 0, [strategy], [], [])
    run_id = store.start_run("evolve")
    for policy in (f"{strategy.id}@tuning", "single:a"):
        store.record_result(
            ResultRecord(run_id, policy, "t1", "gsm8k", "4", True, 1.0, "", 1, 10, 0.0)
        )
    with TestClient(TraceViewer(store).app) as client:
        page = client.get(f"/runs/{run_id}").text
    store.close()
    assert f"{strategy.id}@tuning" in page
    assert "default: single:a; gsm8k: single:a, escalate to single:b always" in page
    assert page.count("class='strategy muted'") == 1  # a single model needs no gloss
