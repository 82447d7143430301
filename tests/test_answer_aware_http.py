"""The in-process replay simulation of multi-turn TRINITY gives the same per-question outcome
(ACCEPT, verdict, calls) as the same runs played over the real HTTP replay server of the same
records folders: on a written folder with sampled policies, and on real recorded gpt-4 GSM8K
outputs."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import numpy as np
import pytest

from consortium.evaluation.recorded.episodes import VERIFIER, WORKER, Episodes
from consortium.evaluation.recorded.head import n_weights, rollout
from consortium.evaluation.recorded.http_replay import run_over_http
from consortium.evaluation.recorded.tables import outcome_table
from consortium.records import OutputRow, load_records, write_records
from consortium.records.layouts import import_files
from consortium.replay.launch import ReplayServerProcess
from tests.toy_records import toy_manifest

ROOT = Path(__file__).resolve().parents[1]


def _rows() -> list[OutputRow]:
    rows = []
    for q in range(30):
        gold = str(q)
        answers = {
            "cheap-a": [gold if q % 3 else str(q + 7), str(q + 7)],
            "cheap-b": [gold if q % 2 else str(q + 9)],
            "strong": [gold, gold if q % 5 else str(q + 1)],
        }
        for model, found in answers.items():
            for k, answer in enumerate(found):
                text = f"Working on question {q} as {model}, try {k}. The answer is {answer}."
                rows.append(
                    OutputRow(
                        str(q),
                        f"Question number {q}: what is {q} plus zero?",
                        gold,
                        model,
                        k,
                        text,
                        answer,
                        answer == gold,
                        None,
                        20,
                        len(text) // 4,
                        True,
                        0.001,
                        True,
                    )
                )
    return rows


def _compare(folder: Path, runs: list[tuple[int, list[tuple[int, int]]]]) -> int:
    records = load_records(folder)
    table = outcome_table(records)
    episodes = Episodes(table)
    rows = {r["question_id"]: r for r in records.table.to_pylist()}
    checked = 0
    with (
        ReplayServerProcess(None, records=[folder]) as server,
        httpx.Client(base_url=server.base_url, timeout=30) as client,
    ):
        for q, actions in runs:
            t = episodes.start(q)
            for model, role in actions:
                if episodes.done(t):
                    break
                episodes.step(t, model, role)
            played = [(table.models[m], r) for m, r, _ in t.turns]
            row = rows[table.question_ids[q]]
            over_http = run_over_http(client, row["question"], row["reference"], "number", played)
            assert over_http.accepted == t.accepted, (q, played)
            assert over_http.correct == episodes.correct(t), (q, played)
            assert over_http.calls == t.calls, (q, played)
            checked += 1
    return checked


def test_sampled_policies_give_the_same_outcomes_in_process_and_over_http(tmp_path: Path) -> None:
    folder = tmp_path / "toyhttp"
    manifest = toy_manifest("toyhttp").model_copy(update={"questions": 30})
    write_records(folder, manifest, _rows())
    table = outcome_table(load_records(folder))
    episodes = Episodes(table)
    rng = np.random.default_rng(0)
    runs = []
    for q in range(table.n_questions):
        weights = rng.normal(0, 2, n_weights(episodes))
        done = rollout(episodes, weights, q, rng)
        runs.append((q, [(m, r) for m, r, _ in done.transcript.turns]))
    assert any(VERIFIER in [r for _, r in actions] for _, actions in runs)
    assert _compare(folder, runs) == 30


def test_real_gpt4_gsm8k_outcomes_match_over_http(tmp_path: Path) -> None:
    real = Path(os.environ.get("CONSORTIUM_REAL_OUTPUTS", ROOT.parent / "shared/data"))
    path = real / "mot-cascade/GPT4_result/gsm_cot1.json"
    if not path.is_file():
        pytest.fail(
            f"recorded gpt-4 GSM8K outputs not found at {path}; set CONSORTIUM_REAL_OUTPUTS"
        )
    manifest, rows = import_files(
        "mot-cascade", [path], dataset="gsm8k", kind="number", model="gpt-4", limit=12
    )
    folder = tmp_path / "gsm8k"
    write_records(folder, manifest, rows)
    plans = [[(0, WORKER), (0, VERIFIER)], [(0, WORKER), (0, WORKER), (0, VERIFIER)]]
    runs = [(q, plans[q % 2]) for q in range(12)]
    assert _compare(folder, runs) == 12
