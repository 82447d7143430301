"""Recorded debates in the records format: the FORD importer on a tiny folder of its layout (turn
rows, what each turn saw, the answer line the source kept apart), the format's turn columns and
protocol, the layout's quirks (the roundtable's misplaced turn, ANLI's latest-answers records),
and every real FORD file read into the counts the import report states."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from consortium.records.corpora import import_recipe
from consortium.records.debate_corpora import FORD_RECIPES, debate_recipe, primary_folders
from consortium.records.errors import RecordsError
from consortium.records.importers.ford_files import _seat_lists, read_ford_run
from consortium.records.schema import COLUMNS, TURN_COLUMNS
from consortium.records.store import load_records, write_records
from tests.debate_files import write_toy_ford


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    write_toy_ford(tmp_path)
    manifest, rows = import_recipe(debate_recipe("gpt35-gpt4", "toy", "run1", 2), tmp_path)
    write_records(tmp_path / "toy", manifest, rows)
    return tmp_path / "toy"


def test_a_debate_is_read_into_turn_rows_that_name_what_they_saw(toy: Path) -> None:
    loaded = load_records(toy)
    assert loaded.table.schema == TURN_COLUMNS
    protocol = loaded.manifest.protocol
    assert protocol is not None and protocol.speakers == ["gpt-3.5-turbo", "gpt-4"]
    assert protocol.max_rounds == 2 and protocol.run == "run1"
    rows = {(r.question_id, r.model, r.sample): r for r in loaded.rows()}
    # sample 0: the reply to the question alone, an ordinary row graded by our grader
    alone = rows[("1", "gpt-4", 0)]
    assert alone.turn is None and alone.seen is None and alone.response.startswith("Answer: (B)")
    assert alone.correct is True and alone.source_correct is True
    # the first answers are turn 0 (sample 1) and saw nothing
    first = rows[("1", "gpt-3.5-turbo", 1)]
    assert (first.turn, first.seen, first.source_answer) == (0, (), "A")
    assert first.response.endswith("\n\nAnswer: (A)") and first.correct is False
    # gpt-3.5 gives in at turn 1, after reading both first answers
    given = rows[("1", "gpt-3.5-turbo", 2)]
    assert given.turn == 1 and given.seen == ("gpt-3.5-turbo#1", "gpt-4#1")
    assert given.answer == "B" and given.correct is True
    # question 2 goes to the cap: gpt-4's turn 2 saw the three turns before it
    last = rows[("2", "gpt-4", 2)]
    assert last.turn == 2 and last.seen == ("gpt-3.5-turbo#1", "gpt-4#1", "gpt-3.5-turbo#2")
    # question 0 was not debated: its first answers only
    assert [r.turn for k, r in rows.items() if k[0] == "0" and r.turn is not None] == [0, 0]
    assert not any(k[0] == "0" and k[2] > 1 for k in rows)


def test_a_turn_the_source_read_no_answer_from_has_no_answer_line(tmp_path: Path) -> None:
    ford = write_toy_ford(tmp_path)
    path = ford / "output/debate_chatgpt_gpt4/round1_chatgpt/toy_agreed.jsonl"
    record = json.loads(path.read_text())
    record["P"][-1] = "None"
    path.write_text(json.dumps(record) + "\n")
    run = read_ford_run(ford, "debate_chatgpt_gpt4", ("chatgpt", "gpt4"), "toy", "")
    assert run.debates["1"].later[0].letter is None
    _, rows = import_recipe(debate_recipe("gpt35-gpt4", "toy", "run1", 2), tmp_path)
    (turn,) = [r for r in rows if r.question_id == "1" and r.turn == 1]
    assert "Answer:" not in turn.response and turn.source_correct is False


def test_a_folder_without_turns_keeps_the_plain_columns(tmp_path: Path, toy: Path) -> None:
    loaded = load_records(toy)
    plain = [r for r in loaded.rows() if r.turn is None]
    manifest = loaded.manifest.model_copy(update={"protocol": None})
    written = write_records(tmp_path / "plain", manifest, plain)
    assert written.table.schema == COLUMNS
    assert "protocol" not in json.loads((tmp_path / "plain/manifest.json").read_text())
    assert load_records(tmp_path / "plain").rows() == plain


def test_a_protocol_without_turn_columns_is_one_line(tmp_path: Path, toy: Path) -> None:
    table = pq.read_table(toy / "outputs.parquet").select(COLUMNS.names)
    pq.write_table(table, toy / "outputs.parquet")
    with pytest.raises(RecordsError, match=r"names a recorded debate but outputs\.parquet has no"):
        load_records(toy)
    broken = table.append_column("turn", pa.array([0] * table.num_rows, pa.int32()))
    pq.write_table(broken, toy / "outputs.parquet")
    with pytest.raises(RecordsError, match="missing: seen, source_answer"):
        load_records(toy)


def test_the_roundtables_misplaced_turn_is_read_from_where_it_sits() -> None:
    # e-CARE's roundtable stores davinci's turn 2 in gpt-4's list, after gpt-4's first answer
    lists = [["c0", "c1"], ["d0"], ["g0", "d2", "g3"]]
    assert _seat_lists(lists, ("c", "d", "g"), 6) == [["c0", "c1"], ["d0", "d2"], ["g0", "g3"]]
    assert _seat_lists([["c0", "c1"], ["d0", "d2"], ["g0"]], ("c", "d", "g"), 5)[1] == ["d0", "d2"]
    with pytest.raises(IndexError):
        _seat_lists([["c0"], ["d0"], ["g0", "x", "y"]], ("c", "d", "g"), 5)


def test_latest_answer_records_take_their_letters_from_the_records_before(tmp_path: Path) -> None:
    # ANLI's records still disagreeing keep only each seat's latest answer (U1, U2)
    ford = write_toy_ford(tmp_path)
    team = ford / "output/debate_chatgpt_gpt4"
    for turn in ("round1_chatgpt", "round2_gpt4"):
        path = team / turn / "toy_candidate.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            letters, seats = row.pop("P")[2:], row.pop("M")[2:]
            latest = dict(zip(seats, letters, strict=True))
            row["U1"], row["U2"] = latest["chatgpt"], latest["gpt4"]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = read_ford_run(ford, "debate_chatgpt_gpt4", ("chatgpt", "gpt4"), "toy", "")
    debate = run.debates["2"]
    assert debate.ending == "cap"
    assert [t.letter for t in (*debate.first, *debate.later)] == ["A", "B", "A", "B"]


def test_a_turn_folder_out_of_the_speaking_order_is_one_line(tmp_path: Path) -> None:
    ford = write_toy_ford(tmp_path)
    team = ford / "output/debate_chatgpt_gpt4"
    (team / "round2_gpt4").rename(team / "round2_chatgpt")
    with pytest.raises(RecordsError, match="turn 2 should be gpt4's"):
        read_ford_run(ford, "debate_chatgpt_gpt4", ("chatgpt", "gpt4"), "toy", "")


def test_the_recipes_name_every_team_set_and_run() -> None:
    assert len(FORD_RECIPES) == 18
    assert {r.dataset for r in FORD_RECIPES.values()} == {
        f"ford-{name}" for name in ("anli", "copa", "ecare", "piqa", "socialiqa", "strategyqa")
    }
    assert len(primary_folders()) == 10 and set(primary_folders()) <= set(FORD_RECIPES)


@pytest.mark.slow
def test_every_real_ford_file_is_read(real: Path) -> None:
    """Every run of every team and set: each question read once, each disputed question's
    debate found in the run or counted as missing, no record left unread."""
    expected = {  # (team, set, run): (questions, first answers differ, debates found)
        ("debate_chatgpt_davinci", "piqa", "3"): (1838, 421, 421),
        ("debate_chatgpt_davinci", "piqa", "2"): (1838, 421, 241),
        ("debate_chatgpt_gpt4", "ecare", ""): (2122, 283, 281),
        ("debate_table_chatgpt_davinci_gpt4", "ecare", ""): (2122, 511, 511),
        ("debate_chatgpt_davinci", "anli", ""): (1507, 288, 288),
    }
    seats = {
        "debate_chatgpt_davinci": ("chatgpt", "davinci"),
        "debate_chatgpt_gpt4": ("chatgpt", "gpt4"),
        "debate_table_chatgpt_davinci_gpt4": ("chatgpt", "davinci", "gpt4"),
    }
    for (team, name, run), counts in expected.items():
        read = read_ford_run(real / "ford", team, seats[team], name, run)
        disputed = sum(q.disputed for q in read.questions.values())
        assert (len(read.questions), disputed, len(read.debates)) == counts, (team, name, run)
        assert not [note for note in read.notes if "not read" in note or "no single" in note]


def test_the_sample_policies_refuse_a_recorded_debate(toy: Path) -> None:
    from consortium.evaluation.recorded.tables import outcome_table

    with pytest.raises(RecordsError, match="not samples of the question alone"):
        outcome_table(load_records(toy))
