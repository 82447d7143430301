"""The pool a replay server writes (`replay serve --write-pool`) lets every recorded answer through
whole, however long: a policy folder run over HTTP reads the texts the records runner read and
gives the figures the folder states. A request's own `max_tokens` still cuts an answer, which then
says finish_reason `length`, and `consortium serve` passes that on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from consortium.coord.answers.folder import read_policy, write_policy
from consortium.core.tokens import estimate_tokens
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.pool.config import DEFAULT_MAX_TOKENS, load_pool
from consortium.records import OutputRow, write_records
from consortium.replay.launch import ReplayServerProcess
from consortium.train.answers.policy import fit_answer_policy
from tests.helpers import recorded_first_samples
from tests.test_serve import serving
from tests.toy_records import toy_manifest, toy_rows

WORKING = "Reading the question again, step by step, and checking each step. " * 90
"""What the strong model writes before its answer: past the default max_tokens, so an answer cut
there loses its last line (words only, so that no number in it reads as an answer)."""


def long_rows() -> list[OutputRow]:
    """The toy records, the strong model (always right) answering after a long working."""
    rows = []
    for row in toy_rows():
        if row.model == "strong":
            text = f"{WORKING}\n{row.response}"
            row = replace(row, response=text, tokens_out=estimate_tokens(text))
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("records") / "long"
    write_records(folder, toy_manifest("long"), long_rows())
    return folder


@pytest.fixture(scope="module")
def replay(records: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The replay server of the records; yields the pool file it wrote."""
    pool_file = tmp_path_factory.mktemp("pool") / "replay.toml"
    with ReplayServerProcess(None, "--write-pool", str(pool_file), records=[records]):
        yield pool_file


def test_the_written_pool_allows_each_models_longest_recorded_answer(replay: Path) -> None:
    longest = max(estimate_tokens(row.response or "") for row in long_rows())
    assert longest > DEFAULT_MAX_TOKENS
    limits = {entry.name: entry.max_tokens for entry in load_pool(replay).models}
    default = DEFAULT_MAX_TOKENS
    assert limits == {"cheap-a": default, "cheap-b": default, "strong": longest}


def test_a_policy_folder_over_http_reads_the_whole_answers_and_its_stated_figures(
    records: Path, replay: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "single"
    write_policy(folder, fit_answer_policy("single", records).policy)
    assert read_policy(folder).models == ["strong"]
    result = run_evaluation(
        EvalConfig(
            replay,
            f"records:path={records}:split=test",
            (str(folder),),
            baselines=False,
            traces=f"sqlite:///{tmp_path / 't.db'}",
        )
    )
    (results,) = result.per_policy.values()
    recorded = recorded_first_samples(records)
    answers = [r.outcome and r.outcome.answer for r in results]
    assert answers == [recorded[(r.task.id, "strong")] for r in results]
    live = 100 * sum(r.grade.correct for r in results) / len(results)
    assert live == pytest.approx(read_policy(folder).test.accuracy) == 100.0


def _streamed_finish(url: str, body: dict[str, object]) -> tuple[str, str | None]:
    """A streamed answer's text and the finish_reason of its last chunk."""
    text, finish = "", None
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=60) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line.removeprefix("data: ")).get("choices", []):
                text += choice["delta"].get("content") or ""
                finish = choice["finish_reason"] or finish
    return text, finish


def test_serve_says_length_where_the_answering_call_was_cut(
    records: Path, replay: Path, tmp_path: Path
) -> None:
    question_id = "0"
    text = recorded_first_samples(records)[(question_id, "strong")]
    body = {"model": "consortium", "messages": [{"role": "user", "content": "question 0"}]}
    with serving(replay, tmp_path / "t.db", "--policy", "single:strong") as url:
        whole = httpx.post(f"{url}/chat/completions", json=body, timeout=60).json()
        cut = httpx.post(f"{url}/chat/completions", json={**body, "max_tokens": 8, "n": 2})
        streamed = _streamed_finish(url, {**body, "max_tokens": 8, "stream": True})
    assert whole["choices"][0]["message"]["content"] == text
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert cut.status_code == 200, cut.text
    choices = cut.json()["choices"]
    assert [c["message"]["content"] for c in choices] == [text[:32]] * 2
    assert [c["finish_reason"] for c in choices] == ["length"] * 2
    assert streamed == (text[:32], "length")
