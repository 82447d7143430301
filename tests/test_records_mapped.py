"""The `fields` layout: any JSONL / JSON / CSV / Parquet file or `datasets` folder read through a
declared field map, several files of several models in one command, the recipe kept in the
manifest (`records reimport`), and a user's files through to `consortium coordinate`."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from consortium.records import load_records
from consortium.records.errors import RecordsError
from consortium.records.importers.mapped import read_mapped
from consortium.records.layouts import import_files
from consortium.records.store import read_manifest, write_records
from tests.helpers import required
from tests.test_cli import cli, one_line_error

MAP = {
    "question": "question.stem",
    "options": "question.choices",
    "reference": "answerKey",
    "response": "vanilla.generation[0]",
    "correct": "vanilla.score",
    "cost_usd": "usage.cost",
}
MAP_ARGS = [arg for key, path in MAP.items() for arg in ("--map", f"{key}={path}")]
# model -> (right unless question index % skill == 0, recorded cost per call)
MODELS = {"m1": (2, 0.001), "m2": (3, 0.002), "m3": (5, 0.01)}


def nested_row(i: int, skill: int, cost: float) -> dict[str, Any]:
    """ARC-like: the question an object with its stem and {label, text} choices, the gold under
    answerKey, the response under vanilla.generation[0] with the source's 0/1 score."""
    gold = "ABCD"[i % 4]
    right = i % skill != 0
    said = gold if right else "ABCD"[(i + 1) % 4]
    return {
        "id": f"q{i}",
        "question": {
            "stem": f"Which option is number {i}?",
            "choices": [{"label": x, "text": f"{x.lower()}-{i}"} for x in "ABCD"],
        },
        "answerKey": gold,
        "vanilla": {"generation": [f"Thinking.\nThe answer is ({said})."], "score": int(right)},
        "usage": {"cost": cost},
    }


def three_files(folder: Path, questions: int = 40) -> dict[str, Path]:
    files = {}
    for model, (skill, cost) in MODELS.items():
        path = folder / f"{model}.jsonl"
        rows = [nested_row(i, skill, cost) for i in range(questions)]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        files[model] = path
    return files


def file_args(files: dict[str, Path]) -> list[str]:
    return [arg for model, path in files.items() for arg in ("--file", f"{path}={model}")]


def test_three_files_of_three_models_join_through_the_map(tmp_path: Path) -> None:
    files = three_files(tmp_path, questions=12)
    manifest, rows = import_files(
        "fields",
        dataset="mine",
        kind="choice",
        files=[(path, model) for model, path in files.items()],
        field_map=MAP,
    )
    assert manifest.models == ["m1", "m2", "m3"] and manifest.questions == 12
    assert len(rows) == 36
    second = next(r for r in rows if r.question_id == "2" and r.model == "m2")
    assert second.question == "Which option is number 1?\nA. a-1\nB. b-1\nC. c-1\nD. d-1"
    assert second.reference == "B" and second.response == "Thinking.\nThe answer is (B)."
    assert second.cost_usd == 0.002 and not second.cost_estimated and second.tokens_estimated
    for row in rows:
        index = int(row.question_id) - 1  # ids are row numbers, from 1
        right = index % MODELS[row.model][0] != 0
        assert row.reference == "ABCD"[index % 4]
        assert row.source_correct is right
        assert row.correct is right  # our letter grader reads the same verdict
        assert row.answer == ("ABCD"[index % 4] if right else "ABCD"[(index + 1) % 4])
    assert any("row numbers" in note for note in manifest.notes)
    assert len(manifest.notes) == len(set(manifest.notes))  # the files' notes stated once


def test_references_by_index_label_or_text_become_letters(tmp_path: Path) -> None:
    rows = [
        {"q": "Two plus two?", "opts": ["3", "4", "5"], "gold": 1, "out": "B"},
        {"q": "Colour of snow?", "opts": ["black", "white"], "gold": "white", "out": "A"},
        {  # ARC's numeric labels and the {text, label} columns of a datasets row
            "q": "Third?",
            "opts": {"text": ["x", "y", "z"], "label": ["1", "2", "3"]},
            "gold": "3",
            "out": "C",
        },
        {"q": "Pick b.", "opts": {"a": "first", "b": "second"}, "gold": "b", "out": "(B)"},
        {"q": "Three?", "opts": ["6", "5", "3"], "gold": "3", "out": "C"},  # a text: the option
        {"q": "Four?", "opts": ["3", "4", "9"], "gold": 4, "out": "B"},  # out of range: the text
    ]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"meta": {"n": 4}, "data": rows}))  # an object holding one list
    field_map = {"question": "q", "options": "opts", "reference": "gold", "response": "out"}
    outputs = read_mapped(path, "m", field_map).outputs
    assert [o.reference for o in outputs] == ["B", "B", "C", "B", "C", "B"]
    assert outputs[0].question == "Two plus two?\nA. 3\nB. 4\nC. 5"
    assert outputs[3].question == "Pick b.\nA. first\nB. second"
    assert [o.task for o in outputs] == [
        {"letters": "ABC"},
        {"letters": "AB"},
        {"letters": "ABC"},
        {"letters": "AB"},
        {"letters": "ABC"},
        {"letters": "ABC"},
    ]
    assert [o.question_id for o in outputs] == ["1", "2", "3", "4", "5", "6"]


def test_five_options_are_graded_with_their_own_letters(tmp_path: Path) -> None:
    path = tmp_path / "five.jsonl"
    rows = [
        {"id": f"p{i}", "q": f"Q{i}", "opts": [f"o{k}" for k in range(5)], "gold": 4, "out": a}
        for i, a in enumerate(["The answer is E.", "E", "The answer is D."])
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    field_map = {"id": "id", "question": "q", "options": "opts", "reference": "gold"}
    manifest, records = import_files(
        "fields",
        [path],
        dataset="five",
        kind="choice",
        model="m",
        field_map={**field_map, "response": "out"},
    )
    by_id = {r.question_id: r for r in records}
    assert by_id["p0"].question.endswith("\nD. o3\nE. o4")
    assert {r.reference for r in records} == {"E"}
    # E is a letter of these questions: a grader reading only A-D would find no choice
    assert [by_id[q].answer for q in ("p0", "p1", "p2")] == ["E", "E", "D"]
    assert [by_id[q].correct for q in ("p0", "p1", "p2")] == [True, True, False]
    assert manifest.questions == 3


def flat_rows(skill: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(6):
        row = nested_row(i, skill, 0.0)
        rows.append(
            {
                "qid": row["id"],
                "stem": row["question"]["stem"],
                "A": "a",
                "choices": row["question"]["choices"],
                "answerKey": row["answerKey"],
                "generation": row["vanilla"]["generation"][0],
                "score": row["vanilla"]["score"],
                "verdict": ["no", "yes"][row["vanilla"]["score"]],
            }
        )
    return rows


def test_csv_parquet_json_and_a_datasets_folder_give_the_same_outputs(tmp_path: Path) -> None:
    datasets = required("datasets")
    rows = flat_rows(skill=2)
    nested = [nested_row(i, 2, 0.0) for i in range(6)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nested))
    (tmp_path / "a.json").write_text(json.dumps(nested))
    pq.write_table(pa.Table.from_pylist(nested), tmp_path / "a.parquet")
    datasets.Dataset.from_list(nested).save_to_disk(str(tmp_path / "hf"))
    with (tmp_path / "a.csv").open("w", newline="") as handle:
        columns = ["id", "question.stem", "options", "answerKey", "vanilla.generation[0]", "ok"]
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        for row in rows:  # dotted column names are read as whole keys; options as JSON text
            writer.writerow(
                {
                    "id": row["qid"],
                    "question.stem": row["stem"],
                    "options": json.dumps([c["text"] for c in row["choices"]]),
                    "answerKey": row["answerKey"],
                    "vanilla.generation[0]": row["generation"],
                    "ok": row["verdict"],
                }
            )
    field_map = {**MAP, "id": "id"}
    del field_map["cost_usd"]
    expected = read_mapped(tmp_path / "a.jsonl", "m", field_map).outputs
    assert [o.source_correct for o in expected] == [i % 2 != 0 for i in range(6)]
    for name in ("a.json", "a.parquet", "hf"):
        assert read_mapped(tmp_path / name, "m", field_map).outputs == expected, name
    csv_map = {**field_map, "options": "options", "correct": "ok"}
    assert read_mapped(tmp_path / "a.csv", "m", csv_map).outputs == expected


def test_rows_naming_their_model_and_listing_samples(tmp_path: Path) -> None:
    path = tmp_path / "pool.jsonl"
    rows = [
        {"q": "1+1?", "gold": 2, "who": "small", "outs": ["2", "3"], "ok": [True, False]},
        {"q": "1+1?", "gold": 2, "who": "big", "outs": ["2"], "ok": "correct"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    field_map = {"id": "q", "question": "q", "reference": "gold", "response": "outs"}
    outputs = read_mapped(path, None, {**field_map, "model": "who"}).outputs
    assert [(o.model, o.sample, o.response) for o in outputs] == [
        ("small", 0, "2"),
        ("small", 1, "3"),
        ("big", 0, "2"),
    ]
    assert {o.reference for o in outputs} == {"2"} and all(o.task == {} for o in outputs)
    with pytest.raises(RecordsError, match=r"row 1: correct .*not a verdict"):
        read_mapped(path, None, {**field_map, "model": "who", "correct": "ok"})


def test_bad_rows_and_maps_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    rows = [nested_row(i, 2, 0.0) for i in range(3)]
    del rows[2]["question"]
    rows[2]["answerKey"] = "B"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(RecordsError) as missing:
        read_mapped(path, "m", MAP)
    assert str(missing.value) == (
        "a.jsonl row 3: no field 'question.stem' (keys: id, answerKey, vanilla, usage)"
    )
    with pytest.raises(RecordsError) as deeper:
        read_mapped(path, "m", {**MAP, "response": "vanilla.generation[2]"})
    assert str(deeper.value) == (
        "a.jsonl row 1: no field 'vanilla.generation[2]' ('vanilla.generation' has 1 item)"
    )
    with pytest.raises(RecordsError) as too_high:
        read_mapped(path, "m", {**MAP, "question": "question"})
    assert str(too_high.value) == (
        "a.jsonl row 1: question: 'question' is an object (keys: stem, choices), not a text"
    )
    with pytest.raises(RecordsError) as unknown:
        read_mapped(path, "m", {**MAP, "answer": "x"})
    assert str(unknown.value).startswith("field map: unknown field 'answer'; known: question, ")
    with pytest.raises(RecordsError, match="response not mapped"):
        read_mapped(path, "m", {"question": "question.stem"})
    with pytest.raises(RecordsError, match=r"field path 'a\.\.b'"):
        read_mapped(path, "m", {**MAP, "question": "a..b"})


def test_files_out_of_order_without_ids_are_refused(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rows = [nested_row(i, 2, 0.0) for i in range(3)]
    first.write_text("".join(json.dumps(row) + "\n" for row in rows))
    second.write_text("".join(json.dumps(row) + "\n" for row in reversed(rows)))
    files: list[tuple[Path, str | None]] = [(first, "m1"), (second, "m2")]
    with pytest.raises(RecordsError, match=r"b.jsonl row 1 holds another question than a.jsonl"):
        import_files("fields", dataset="d", kind="choice", files=files, field_map=MAP)
    # with the id mapped, the order does not matter
    manifest, rows_ = import_files(
        "fields", dataset="d", kind="choice", files=files, field_map={**MAP, "id": "id"}
    )
    assert manifest.questions == 3 and {r.question_id for r in rows_} == {"q0", "q1", "q2"}


def test_a_missing_datasets_library_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hf").mkdir()
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(RecordsError, match=r"pip install 'consortium\[hf\]'"):
        read_mapped(tmp_path / "hf", "m", MAP)


def test_the_command_line_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    files = three_files(tmp_path, questions=3)
    common = ["--layout", "fields", "--dataset", "d", "--kind", "choice", "--out", "o"]
    one_line_error(
        cli("records", "import-file", "--file", str(files["m1"]), *MAP_ARGS, *common),
        "expected PATH=MODEL",
    )
    one_line_error(
        cli("records", "import-file", "--file", "nowhere.jsonl=m1", *MAP_ARGS, *common),
        "no such file or folder: nowhere.jsonl",
    )
    one_line_error(
        cli("records", "import-file", *file_args(files), *MAP_ARGS, "--map", "gold=x", *common),
        "unknown field 'gold'; known: question, response, reference",
    )
    one_line_error(
        cli("records", "import-file", *file_args(files), "--map", "question", *common),
        "expected FIELD=PATH",
    )
    one_line_error(
        cli("records", "import-file", *file_args(files), *MAP_ARGS, *common[:-2]),
        "give --out",
    )
    one_line_error(
        cli("records", "import-file", *file_args(files), *MAP_ARGS, *common[:4], "--kind",
            "multiple-choice", "--out", "o"),
        "--kind: expected one of number, latex, choice, code, date, text, got 'multiple-choice'",
    )  # fmt: skip


def test_the_recipe_is_stored_and_reimport_gives_the_same_folder(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    files = three_files(tmp_path / "src")
    out = tmp_path / "mine"
    done = cli(
        "records", "import-file", *file_args(files), "--layout", "fields", *MAP_ARGS,
        "--dataset", "mine", "--kind", "choice", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "120 rows, 40 questions, models m1, m2, m3" in done.stdout
    recipe = read_manifest(out).recipe
    assert recipe is not None and recipe.layout == "fields" and recipe.kind == "choice"
    assert recipe.map == MAP
    assert [(f.path, f.model) for f in recipe.files] == [
        (str(path.resolve()), model) for model, path in files.items()
    ]
    again = tmp_path / "again"
    done = cli("records", "reimport", str(out), "--out", str(again))
    assert done.returncode == 0, done.stderr
    assert (again / "outputs.parquet").read_bytes() == (out / "outputs.parquet").read_bytes()
    assert (again / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()
    # a changed source file shows in a reimport into the same folder
    rows = [json.loads(line) for line in files["m1"].read_text().splitlines()]
    rows[0]["vanilla"]["generation"] = ["The answer is (D)."]
    files["m1"].write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert cli("records", "reimport", str(out)).returncode == 0
    changed = [r for r in load_records(out).rows() if r.question_id == "1" and r.model == "m1"]
    assert changed[0].answer == "D" and changed[0].correct is False


def test_a_folder_without_a_recipe_loads_and_reimport_says_so(tmp_path: Path) -> None:
    files = three_files(tmp_path, questions=3)
    manifest, rows = import_files(
        "fields", dataset="d", kind="choice", files=[(files["m1"], "m1")], field_map=MAP
    )
    folder = tmp_path / "old"
    write_records(folder, manifest.model_copy(update={"recipe": None}), rows)
    stored = json.loads((folder / "manifest.json").read_text())
    assert "recipe" not in stored and stored["schema_version"] == 1  # written as before
    assert load_records(folder).manifest.recipe is None
    one_line_error(cli("records", "reimport", str(folder)), "stores no import recipe")


def test_a_toml_config_gives_the_files_and_map_and_options_override_it(tmp_path: Path) -> None:
    files = three_files(tmp_path, questions=4)
    entries = "".join(
        f'[[files]]\npath = "{path.name}"\nmodel = "{model}"\n\n' for model, path in files.items()
    )
    mapped = "".join(f'{key} = "{path}"\n' for key, path in MAP.items())
    config = tmp_path / "mine.toml"
    config.write_text(
        f'layout = "fields"\ndataset = "from-toml"\nkind = "choice"\nout = "made"\n\n'
        f"{entries}[map]\n{mapped}"
    )
    done = cli("records", "import-file", "--config", str(config), "--dataset", "from-cli")
    assert done.returncode == 0, done.stderr
    records = load_records(tmp_path / "made")  # `out` relative to the TOML file's folder
    assert records.manifest.dataset == "from-cli" and records.manifest.models == ["m1", "m2", "m3"]
    assert records.table.num_rows == 12
    # a --map entry replaces the file's entry for that field only
    done = cli(
        "records", "import-file", "--config", str(config), "--map", "question=question.text",
    )  # fmt: skip
    one_line_error(done, "m1.jsonl row 1: no field 'question.text'")
    config.write_text('layout = "fields"\nsource = "x"\n')
    one_line_error(cli("records", "import-file", "--config", str(config)), "unknown key 'source'")


def test_three_files_to_coordinate_in_two_commands(tmp_path: Path) -> None:
    files = three_files(tmp_path)
    records = tmp_path / "records" / "mine"
    done = cli(
        "records", "import-file",
        "--file", f"{files['m1']}=m1", "--file", f"{files['m2']}=m2", "--file", f"{files['m3']}=m3",
        "--layout", "fields", *MAP_ARGS,
        "--dataset", "mine", "--kind", "choice", "--out", str(records),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = tmp_path / "reports" / "coordination"
    done = cli(
        "coordinate", "--records", str(records), "--out", str(report),
        "--generations", "1", "--popsize", "2", "--minibatch", "4",
        "--cache", str(tmp_path / "cache"),
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(report.with_suffix(".json").read_text())["datasets"][0]
    assert summary["dataset"] == "mine"
    singles = {p["name"]: p for p in summary["policies"] if p["name"] in MODELS}
    assert set(singles) == set(MODELS)
    # m3 is wrong only on every fifth question: the best single model on the test split
    assert "best single m3" in done.stdout
    assert (report.parent / "coordination-mine-frontier.png").stat().st_size > 1000
