"""The replay of a recorded debate over HTTP: the `debate` policy, run live through `eval` against
the replay server of a records folder, gives per question the outcome the rule gives on the
recorded turns in process (the final answer's verdict, the turn submitted, the calls); a turn the
recording does not hold is refused with one clear error, never answered."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from consortium.coord.debate.rule import DebateRule
from consortium.coord.debate.transcript import Spoken, turn_messages
from consortium.evaluation.debates.play import debated_questions, play
from consortium.records.corpora import import_recipe
from consortium.records.debate_corpora import debate_recipe
from consortium.records.store import load_records, write_records
from consortium.replay.debate_parity import debate_parity
from consortium.replay.launch import ReplayServerProcess
from tests.debate_files import write_toy_ford


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    write_toy_ford(tmp_path)
    manifest, rows = import_recipe(debate_recipe("gpt35-gpt4", "toy", "run1", 2), tmp_path)
    write_records(tmp_path / "toy", manifest, rows)
    return tmp_path / "toy"


def live_against_recorded(folder: Path, rule: DebateRule, tmp_path: Path) -> int:
    """The rule over the HTTP replay of `folder` equals it played in process on every question
    compared; how many were."""
    parity = debate_parity(folder, tmp_path, rule)
    assert parity.equal == parity.compared, parity.differ
    return parity.compared


def test_the_debate_over_the_replay_gives_the_recorded_turns(toy: Path, tmp_path: Path) -> None:
    rule = DebateRule(("gpt-3.5-turbo", "gpt-4"), 2)
    assert live_against_recorded(toy, rule, tmp_path) == 4


def test_a_debate_the_recording_does_not_hold_stops_where_the_replay_refuses(
    toy: Path, tmp_path: Path
) -> None:
    # always=1 talks on question 0, whose first answers agreed: no turn was recorded after them
    rule = DebateRule(("gpt-3.5-turbo", "gpt-4"), 2, always=True)
    assert live_against_recorded(toy, rule, tmp_path) == 4
    assert play(rule, debated_questions(load_records(toy))[0]).refused


def test_each_turn_that_is_not_the_recorded_next_one_is_one_clear_error(toy: Path) -> None:
    loaded = load_records(toy)
    question = next(q for q in debated_questions(loaded) if q.question_id == "2")
    a, b = "gpt-3.5-turbo", "gpt-4"
    first = [Spoken(t.model, t.text) for t in question.turns[:2]]
    with ReplayServerProcess(None, records=[toy]) as server:
        client = httpx.Client(base_url=server.base_url, timeout=10)

        def ask(model: str, earlier: list[Spoken]) -> httpx.Response:
            messages = turn_messages(question.question, earlier, model, "choice")
            return client.post("/chat/completions", json={"model": model, "messages": messages})

        assert ask(a, []).json()["choices"][0]["message"]["content"] == first[0].text
        turn1 = ask(a, first)
        assert turn1.json()["choices"][0]["message"]["content"] == question.turns[2].text
        refusals = {
            "gpt-4's, not gpt-3.5-turbo's": ask(a, [*first, Spoken(a, question.turns[2].text)]),
            "turn 2 is not the recorded one": ask(a, [first[0], Spoken(b, "an answer of mine")]),
            "holds every first answer (2), this one 1": ask(a, first[:1]),
            "no later turn was recorded": ask(a, [Spoken(t.model, t.text) for t in question.turns]),
        }
        for reason, response in refusals.items():
            assert response.status_code == 404
            error = response.json()["error"]
            assert error["code"] == "turn_not_recorded" and reason in error["message"]
        other = client.post(
            "/chat/completions",
            json={
                "model": a,
                "messages": turn_messages("Not a recorded question?", [], a, "choice"),
            },
        )
        assert other.status_code == 404 and "no recorded debate" in other.json()["error"]["message"]


def test_two_folders_that_recorded_one_question_with_a_debater_in_common_are_refused(
    toy: Path, tmp_path: Path
) -> None:
    from consortium.core.errors import ConfigError
    from consortium.replay.records import load_records_replay

    twin = tmp_path / "twin"
    loaded = load_records(toy)
    write_records(twin, loaded.manifest, loaded.rows())
    with pytest.raises(ConfigError, match="serve one of them at a time"):
        load_records_replay([toy, twin])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("team", "name", "run", "cap", "limit"),
    [
        ("gpt35-davinci", "copa", "run1", 6, None),
        ("gpt35-davinci-gpt4", "ecare", "run1", 9, 300),
        ("gpt35-gpt4", "piqa", "run3", 6, 400),
    ],
)
def test_parity_on_real_recorded_debates(
    real: Path, tmp_path: Path, team: str, name: str, run: str, cap: int, limit: int | None
) -> None:
    """The recorded protocol over HTTP gives, per question, the recorded final answer: every
    COPA question, and the first questions of the roundtable (three models, e-CARE's misplaced
    turns) and of gpt-3.5 vs gpt-4 on PIQA."""
    manifest, rows = import_recipe(debate_recipe(team, name, run, cap), real, limit=limit)
    write_records(tmp_path / "folder", manifest, rows)
    assert manifest.protocol is not None
    speakers = manifest.protocol.speakers
    rule = DebateRule(tuple(speakers), cap)
    compared = live_against_recorded(tmp_path / "folder", rule, tmp_path)
    assert compared >= (limit or 500) - 10


def test_recording_the_debate_from_its_replay_gives_back_its_turns(
    toy: Path, tmp_path: Path
) -> None:
    """`consortium record --protocol debate:…` over the replay of a recorded debate writes the
    same turns, each after reading the same ones."""
    import subprocess
    import sys

    pool = tmp_path / "replay.toml"
    spec = "debate:models=gpt-3.5-turbo,gpt-4:rounds=2"
    with ReplayServerProcess(None, "--write-pool", str(pool), records=[toy]):
        result = subprocess.run(
            [sys.executable, "-m", "consortium", "record", "--pool", str(pool), "--tasks",
             f"records:path={toy}", "--protocol", spec, "--out", str(tmp_path / "again"),
             "--traces", f"sqlite:///{tmp_path / 't.db'}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "4 debates, 13 turns (5 after the first answers)" in result.stdout

    def turns(folder: Path) -> set[tuple[object, ...]]:
        rows = load_records(folder).rows()
        return {
            (r.question_id, r.model, r.turn, r.response, r.seen is not None and len(r.seen))
            for r in rows
            if r.turn is not None
        }

    again = load_records(tmp_path / "again")
    assert again.manifest.protocol is not None and again.manifest.protocol.max_rounds == 2
    assert turns(tmp_path / "again") == turns(toy)
