"""The learning server's refit is cross-fitted: every labelled request is judged, each by a fit
that did not see it, and the adopted policy is fitted on all of them (`serve.learn.refit`). On a
records folder of DATE's labelled samples (one per model), served first by the cheapest model."""

from __future__ import annotations

import json

import pytest

from consortium.coord.answers.folder import AnswerPolicy
from consortium.demo.serve_learns.singles import single_policy
from consortium.evolve.guards import GuardConfig
from consortium.records.store import Records, load_records, write_records
from consortium.serve.learn.refit import DECISION, FOLDS, fold_of, refit
from consortium.train.answers.policy import fit_answer_policy
from tests.helpers import SharedRecords

LABELLED = 80


@pytest.fixture(scope="module")
def labelled(shared_records: SharedRecords, tmp_path_factory: pytest.TempPathFactory) -> Records:
    """The first `LABELLED` questions' first samples, as `export_labelled` writes traffic."""
    source = load_records(shared_records("date", 240))
    keep = list(dict.fromkeys(source.table.column("question_id").to_pylist()))[:LABELLED]
    rows = [row for row in source.rows() if row.question_id in keep and row.sample == 0]
    folder = tmp_path_factory.mktemp("refits") / "r000080"
    manifest = source.manifest.model_copy(update={"dataset": "served", "questions": LABELLED})
    return write_records(folder, manifest, rows)


@pytest.fixture(scope="module")
def cheapest(shared_records: SharedRecords) -> AnswerPolicy:
    return single_policy(shared_records("date", 240), "cheapest")


def test_every_labelled_request_is_judged_held_out_and_the_adopted_fit_saw_them_all(
    labelled: Records, cheapest: AnswerPolicy
) -> None:
    outcome = refit(labelled, cheapest, GuardConfig(), lam=0.0)
    assert outcome.adopted is not None, outcome.reason  # gpt-4 is right 9 in 10, Llama-2 5 in 10
    assert outcome.evidence["evidence"]["tasks"] == LABELLED  # one split would judge about half
    folds = set(fold_of(load_records(labelled.folder).table.column("question_id").to_pylist()))
    assert sum(outcome.evidence["cross_fit"]["kinds"].values()) == len(folds) == FOLDS
    assert outcome.adopted.train.questions == LABELLED  # fitted on every labelled request
    assert outcome.adopted.test.questions == LABELLED  # its test figures: the cross-fitted ones
    assert "cross-fitted" in outcome.adopted.selection
    decision = json.loads((labelled.folder / DECISION).read_text())
    assert decision["adopted"] and decision["labelled_questions"] == LABELLED


def test_folds_come_from_the_response_id_alone() -> None:
    ids = [f"chatcmpl-{n:04d}" for n in range(200)]
    assert fold_of(ids).tolist() == fold_of(list(reversed(ids)))[::-1].tolist()
    counts = [int((fold_of(ids) == fold).sum()) for fold in range(FOLDS)]
    assert min(counts) > 20  # each fold holds a fair share


def test_a_fit_on_named_questions_states_its_figures_on_those_and_the_rest(
    labelled: Records,
) -> None:
    ids = list(dict.fromkeys(labelled.table.column("question_id").to_pylist()))
    fitted = fit_answer_policy("single", labelled.folder, fit_on=ids[:10]).policy
    assert (fitted.train.questions, fitted.test.questions) == (10, LABELLED - 10)
    everything = fit_answer_policy("single", labelled.folder, fit_on=ids).policy
    assert (everything.train.questions, everything.test.questions) == (LABELLED, 0)
