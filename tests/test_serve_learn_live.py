"""`serve --learn` on the real llama.cpp pool (SmolLM2-135M + Gemma 3 270M): arithmetic
questions as traffic, every one explored and labelled with its reference (graded by the number
grader), and the refit that follows judged, its decision written with its evidence. A behaviour
test: whether the refit adopts is the guard's call on 16 questions, not asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consortium.coord.answers.folder import read_policy, write_policy
from consortium.coord.answers.rules import SingleAnswer
from consortium.records import load_records
from consortium.serve.learn import versions
from consortium.smallmodels.llamacpp import LlamaCppServers
from consortium.tasks.arithmetic import arithmetic_tasks
from tests.test_serve import serve_process
from tests.test_serve_learn import _ask, _label, _wait_for_refits

pytestmark = [pytest.mark.real, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = 16
START_MODEL = "smollm2-135m"


def _single_start(folder: Path) -> Path:
    """A single-model answer-aware folder over the live pool's SmolLM2 (number answers)."""
    template = read_policy(ROOT / "policies" / "gsm8k-single")
    write_policy(folder, template.model_copy(update={
        "name": f"single:{START_MODEL}", "models": [START_MODEL],
        "params": SingleAnswer(START_MODEL).params(), "prices": {}, "records": [],
        "selection": "the live pool's smallest model, as a start",
    }))  # fmt: skip
    return folder


def test_the_live_pool_learns_while_it_serves(
    llama_servers: LlamaCppServers, tmp_path: Path
) -> None:
    pool = llama_servers.write_pool(tmp_path / "local.toml")
    start = _single_start(tmp_path / "start")
    learn = tmp_path / "learn"
    args = ("--policy", str(start), "--learn", str(learn), "--refit-every", str(QUESTIONS))
    with serve_process(pool, tmp_path / "t.db", *args, "--explore", "1") as server:
        url = f"{server.root}/v1"
        for task in arithmetic_tasks(QUESTIONS, seed=11):
            reply = _ask(url, task.question)
            assert reply.headers["x-consortium-policy-version"] == "v0"
            assert reply.headers["x-consortium-answered-by"] == START_MODEL
            labelled = _label(url, id=reply.json()["id"], reference=task.reference)
            assert labelled.status_code == 200, labelled.text
        policy = _wait_for_refits(url, 1)
    assert policy["labelled"] == QUESTIONS
    (judged,) = policy["refits"]
    decision = json.loads((learn / "refits" / f"r{QUESTIONS:06d}" / "decision.json").read_text())
    assert decision["adopted"] == (judged["adopted"] is not None)
    assert decision["reason"] == judged["reason"]
    assert decision["incumbent"] == f"single:{START_MODEL}"
    exported = load_records(learn / "refits" / f"r{QUESTIONS:06d}").table.to_pylist()
    assert {row["model"] for row in exported} == {"smollm2-135m", "gemma3-270m"}  # explored
    # the last requests' shadow calls may still run when the refit exports: those wait for the next
    questions = {row["question_id"] for row in exported}
    assert QUESTIONS // 2 <= len(questions) <= QUESTIONS
    assert {row["correct"] for row in exported} <= {True, False}  # every sample graded
    if judged["adopted"] is not None:  # the guard's call: a version with its evidence, serving
        evidence = json.loads((learn / "policies" / "v1" / "evidence.json").read_text())
        assert evidence["replaces"] == "v0" and evidence["reason"] == judged["reason"]
        assert policy["version"] == "v1"
    else:
        assert policy["version"] == "v0" and versions.adopted(learn) == []
    if "candidate" in decision:  # cross-fitted: every exported request judged held out
        assert decision["evidence"]["tasks"] == decision["labelled_questions"] == len(questions)
