"""`consortium feedback export`: a learning server's labelled traffic as a records folder that
`train coordinator` takes, with the requests that lack a sample of some model left out and
counted; bad input one line. Over the HTTP replay of test_serve_learn's DATE records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from consortium.coord.answers.folder import write_policy
from consortium.demo.serve_learns.singles import single_policy
from consortium.pool.config import load_pool
from consortium.records import load_records
from consortium.serve.learn.versions import EVIDENCE
from tests.test_cli import cli, one_line_error
from tests.test_serve import serve_process
from tests.test_serve_learn import (  # noqa: F401 (the fixtures)
    _ask,
    _label,
    _train_questions,
    cheapest,
    records,
    replay,
)


def _serve_and_label(pool: Path, traces: Path, pairs: list[tuple[str, str]], *args: str) -> None:
    """Ask each question and label its answer with the reference, then stop the server."""
    with serve_process(pool, traces, *args) as server:
        url = f"{server.root}/v1"
        for question, reference in pairs:
            labelled = _label(url, id=_ask(url, question).json()["id"], reference=reference)
            assert labelled.status_code == 200, labelled.text


def test_feedback_export_writes_the_explored_labelled_traffic_that_train_coordinator_takes(
    replay: Path,  # noqa: F811
    cheapest: Path,  # noqa: F811
    records: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    learn, out = tmp_path / "learn", tmp_path / "served"
    pairs = _train_questions(records)[:31]
    serving = ("--policy", str(cheapest), "--learn", str(learn))
    export = ("feedback", "export", "--learn", str(learn), "--policy", str(cheapest))
    _serve_and_label(replay, tmp_path / "t.db", pairs[:1], *serving)  # not explored
    unexplored = cli(*export, "--out", str(out))
    one_line_error(unexplored, "no labelled request has a sample of every pool model")
    assert "asked only Llama-2-13B" in unexplored.stderr and not out.exists()
    _serve_and_label(replay, tmp_path / "t.db", pairs[1:], *serving, "--explore", "1")

    exported = cli(*export, "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.count("\n") == 1
    assert f"30 labelled requests written to {out}" in exported.stdout
    assert "1 left out: no sample of every model" in exported.stdout
    manifest = load_records(out).manifest
    assert sorted(manifest.models) == sorted(load_pool(replay).names)
    assert manifest.questions == 30 and manifest.answer_kind == "date"
    fitted = tmp_path / "fitted"
    trained = cli("train", "coordinator", "--records", str(out), "--kind", "auto",
                  "--out", str(fitted))  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert set(json.loads((fitted / "policy.json").read_text())["models"]) <= set(manifest.models)

    one_line_error(cli(*export, "--out", str(out)), f"--out {out}: exists and is not empty")
    newest = ("feedback", "export", "--learn", str(learn), "--out")
    started = cli(*newest, str(tmp_path / "start"))  # none adopted: the policy serve started from
    assert started.returncode == 0, started.stderr
    assert f"policy {learn / 'policies/start'}" in started.stdout
    write_policy(learn / "policies/v1", single_policy(records, "gpt-4"))
    (learn / "policies/v1" / EVIDENCE).write_text("{}\n")
    again = cli(*newest, str(tmp_path / "again"))  # DIR's newest adopted version
    assert again.returncode == 0, again.stderr
    assert f"policy {learn / 'policies/v1'}" in again.stdout
    assert load_records(tmp_path / "again").manifest.questions == 30
    shutil.rmtree(learn / "policies")  # a DIR that kept no start and adopted nothing
    one_line_error(cli(*newest, str(tmp_path / "none")), "adopted no version and does not record")


def test_feedback_export_refuses_a_folder_no_learning_server_wrote(tmp_path: Path) -> None:
    refused = cli("feedback", "export", "--learn", str(tmp_path), "--out", str(tmp_path / "o"))
    one_line_error(refused, f"{tmp_path}: not a folder of serve --learn")
    assert not (tmp_path / "o").exists()
