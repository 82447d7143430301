"""Inspect AI and lm-eval logs as records: real logs written offline by the libraries themselves
(Inspect's `mockllm` provider; lm-eval's evaluator with a scripted LM on local task YAMLs over
local JSON-lines), imported, graded by our graders and coordinated by `consortium coordinate`.

The logs are written in a child process (the libraries set up logging and event loops of their
own), by the functions below."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from consortium.records import load_records
from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceOutput
from tests.helpers import required
from tests.test_cli import cli as consortium_cli

pytestmark = pytest.mark.slow  # servers and records imports: tens of seconds

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = 40
LETTERS = "ABCDE"
RIGHT = {
    "alpha": lambda i: i % 3 != 0,
    "beta": lambda i: i % 2 == 0,
    "gamma": lambda i: i % 5 in (1, 4),
}
"""Which questions each scripted model answers right (the rest it answers wrong)."""
LM_EVAL_MODELS = ("alpha", "beta")


def gold_position(i: int) -> int:
    return i % 5  # every letter is right somewhere, E included


def options(i: int) -> list[str]:
    values = [i * 7 + d for d in (3, -2, 11, 5, 1)]
    values[gold_position(i)] = i * 7
    return [str(v) for v in values]


def mc_question(i: int) -> str:
    return f"Question {i}: which of these numbers is {i} times 7?"


def qa_question(i: int) -> str:
    return f"Question {i}: what is {i} plus {i + 3}?"


def qa_answer(i: int) -> int:
    return 2 * i + 3


def chosen_position(model: str, i: int) -> int:
    gold = gold_position(i)
    return gold if RIGHT[model](i) else (gold + 1) % 5


def said_number(model: str, i: int) -> int:
    return qa_answer(i) if RIGHT[model](i) else qa_answer(i) + 1


def question_number(text: str) -> int:
    found = re.search(r"Question (\d+)", text)
    assert found is not None, text
    return int(found.group(1))


# --- Inspect: tasks and the mock models' outputs -------------------------------------------------


def inspect_reply(model: str, fail_on: int | None = None) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage

    def reply(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        text = messages[-1].text
        i = question_number(text)
        if i == fail_on:
            raise RuntimeError("provider failed")
        if "ANSWER: $LETTER" in text:
            content = f"ANSWER: {LETTERS[chosen_position(model, i)]}"
        else:
            content = f"The answer is {said_number(model, i)}"
        output = ModelOutput.from_content(model=f"mockllm/{model}", content=content)
        # usage given, so that mockllm counts no tokens (tiktoken would download its encoding)
        output.usage = ModelUsage(
            input_tokens=100 + i, output_tokens=5 + i % 3, total_tokens=105 + i + i % 3
        )
        return output

    return reply


def make_inspect_logs(folder: str) -> None:
    """An MC task (`multiple_choice()` + `choice()`) and a short-answer task (`generate()` +
    `match()`), for three mock models, in both log formats; and a run that fails midway."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import choice, match
    from inspect_ai.solver import generate, multiple_choice

    mc = Task(
        name="mc",
        dataset=MemoryDataset(
            [
                Sample(
                    id=f"mc{i}",
                    input=mc_question(i),
                    choices=options(i),
                    target=LETTERS[gold_position(i)],
                )
                for i in range(QUESTIONS)
            ]
        ),
        solver=multiple_choice(),
        scorer=choice(),
    )
    qa_samples = [
        Sample(id=f"qa{i}", input=qa_question(i), target=str(qa_answer(i)))
        for i in range(QUESTIONS)
    ]
    qa = Task(
        name="qa", dataset=MemoryDataset(qa_samples), solver=generate(), scorer=match(numeric=True)
    )
    for log_format in ("eval", "json"):
        models = [get_model(f"mockllm/{m}", custom_outputs=inspect_reply(m)) for m in RIGHT]
        logs = inspect_eval(
            [mc, qa],
            model=models,
            log_dir=str(Path(folder) / log_format),
            log_format=log_format,
            display="none",
        )
        assert all(log.status == "success" for log in logs)
    broken = Task(
        name="broken", dataset=MemoryDataset(qa_samples[:5]), solver=generate(), scorer=match()
    )
    inspect_eval(
        broken,
        model=get_model("mockllm/alpha", custom_outputs=inspect_reply("alpha", fail_on=3)),
        log_dir=str(Path(folder) / "broken"),
        log_format="eval",
        display="none",
        max_samples=1,
    )


# --- lm-eval: local tasks and a scripted LM ------------------------------------------------------


MC_YAML = """task: tiny_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}/mc.jsonl
  cache_dir: {data}/hf-cache
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}\\nAnswer:"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: gold
metric_list:
  - metric: acc
"""
QA_YAML = """task: tiny_qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}/qa.jsonl
  cache_dir: {data}/hf-cache
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
metric_list:
  - metric: exact_match
filter_list:
  - name: whole
    filter:
      - function: take_first
  - name: number
    filter:
      - function: regex
        regex_pattern: "(-?[0-9]+)$"
      - function: take_first
"""


def make_lm_eval_logs(folder: str) -> None:
    """`simple_evaluate(…, log_samples=True)` and the EvaluationTracker's own writers, as
    `lm-eval run --output_path DIR --log_samples` calls them, for two scripted models."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    data = Path(folder) / "data"
    (data / "tasks").mkdir(parents=True)
    mc_docs = [
        {"question": mc_question(i), "choices": options(i), "gold": gold_position(i)}
        for i in range(QUESTIONS)
    ]
    qa_docs = [{"question": qa_question(i), "answer": str(qa_answer(i))} for i in range(QUESTIONS)]
    for name, docs in (("mc", mc_docs), ("qa", qa_docs)):
        (data / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (data / "tasks" / "tiny_mc.yaml").write_text(MC_YAML.format(data=data))
    (data / "tasks" / "tiny_qa.yaml").write_text(QA_YAML.format(data=data))

    class Scripted(LM):
        def __init__(self, model: str) -> None:
            super().__init__()
            self.model = model

        def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
            results = []
            for request in requests:
                context, continuation = request.args
                i = question_number(context)
                best = options(i)[chosen_position(self.model, i)]
                results.append((-0.5 if continuation.strip() == best else -3.0, False))
            return results

        def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
            return [
                f"The answer is {said_number(self.model, question_number(r.args[0]))}"
                for r in requests
            ]

        def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> Any:
            raise NotImplementedError

    tasks = TaskManager(include_path=str(data / "tasks"), include_defaults=False)
    for model in LM_EVAL_MODELS:
        tracker = EvaluationTracker(output_path=str(Path(folder) / "out"))
        results = simple_evaluate(
            model=Scripted(model),
            model_args=f"pretrained=tiny/{model}",
            tasks=["tiny_mc", "tiny_qa"],
            task_manager=tasks,
            log_samples=True,
            evaluation_tracker=tracker,
        )
        assert results is not None
        samples = results.pop("samples")
        tracker.save_results_aggregated(results=results, samples=samples)
        for task_name in results["configs"]:
            tracker.save_results_samples(task_name=task_name, samples=samples[task_name])


def _in_child(function: str, folder: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", f"from tests.{Path(__file__).stem} import {function}; "
         f"{function}({str(folder)!r})"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    required("inspect_ai")
    folder = tmp_path_factory.mktemp("inspect")
    _in_child("make_inspect_logs", folder)
    return folder


@pytest.fixture(scope="module")
def lm_eval_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    required("lm_eval")
    folder = tmp_path_factory.mktemp("lm-eval")
    _in_child("make_lm_eval_logs", folder)
    return folder / "out"


def log_of(folder: Path, task: str, model: str) -> Path:
    """The log of one task and model (Inspect names files by time, task and an id)."""
    from inspect_ai.log import read_eval_log

    found = [
        p
        for p in sorted(folder.iterdir())
        if p.suffix in (".eval", ".json")
        and (h := read_eval_log(str(p), header_only=True)).eval.task == task
        and h.eval.model == f"mockllm/{model}"
    ]
    assert len(found) == 1, found
    return found[0]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return consortium_cli(*args, env={"HF_HUB_OFFLINE": "1"}, timeout=600)


def without_time(outputs: list[SourceOutput]) -> list[SourceOutput]:
    from dataclasses import replace

    return [replace(o, latency_s=None) for o in outputs]


# --- Inspect ---------------------------------------------------------------------------------


def test_an_inspect_choice_log_imports_its_samples_options_verdicts_and_usage(
    inspect_logs: Path,
) -> None:
    from consortium.records.importers.inspect_logs import read_inspect_log

    for model, right in RIGHT.items():
        imported = read_inspect_log(log_of(inspect_logs / "eval", "mc", model))
        outputs = sorted(imported.outputs, key=lambda o: int(o.question_id[2:]))
        assert [o.question_id for o in outputs] == [f"mc{i}" for i in range(QUESTIONS)]
        for i, output in enumerate(outputs):
            assert output.model == f"mockllm/{model}" and output.sample == 0
            lines = output.question.splitlines()
            assert lines[0] == mc_question(i)
            assert lines[-5:] == [f"{LETTERS[k]}. {v}" for k, v in enumerate(options(i))]
            assert output.reference == LETTERS[gold_position(i)]
            assert output.task == {"letters": "ABCDE"}
            assert output.response == f"ANSWER: {LETTERS[chosen_position(model, i)]}"
            assert output.source_answer == LETTERS[chosen_position(model, i)]
            assert output.source_correct is right(i)
            assert output.source_score == float(right(i))
            assert (output.tokens_in, output.tokens_out) == (100 + i, 5 + i % 3)
            assert output.error is None
        # E is among the right answers (questions 4, 9, … for alpha)
        assert any(o.source_correct and o.reference == "E" for o in outputs)
        assert imported.files[0].model == f"mockllm/{model}"
        assert any("scorer 'choice'" in note for note in imported.notes)


def test_the_eval_and_json_encodings_import_alike(inspect_logs: Path) -> None:
    from consortium.records.importers.inspect_logs import read_inspect_log

    for task in ("mc", "qa"):
        for model in RIGHT:
            binary = read_inspect_log(log_of(inspect_logs / "eval", task, model))
            text = read_inspect_log(log_of(inspect_logs / "json", task, model))
            assert without_time(binary.outputs) == without_time(text.outputs)


def test_a_model_name_overrides_the_logs_and_a_failed_run_keeps_its_samples(
    inspect_logs: Path,
) -> None:
    from consortium.records.importers.inspect_logs import read_inspect_log

    renamed = read_inspect_log(log_of(inspect_logs / "json", "qa", "beta"), model="my-beta")
    assert {o.model for o in renamed.outputs} == {"my-beta"}
    assert renamed.outputs[0].reference == str(qa_answer(int(renamed.outputs[0].question_id[2:])))

    (broken,) = sorted((inspect_logs / "broken").glob("*.eval"))
    imported = read_inspect_log(broken)
    assert any("status error" in n and "provider failed" in n for n in imported.notes)
    by_id = {o.question_id: o for o in imported.outputs}
    assert by_id["qa0"].source_correct is False and by_id["qa1"].source_correct is True
    assert by_id["qa1"].error is None and by_id["qa1"].response == "The answer is 5"
    assert by_id["qa3"].response is None and "provider failed" in (by_id["qa3"].error or "")


def test_reading_inspect_logs_without_the_library_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from consortium.records.importers.inspect_logs import read_inspect_log

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(RecordsError, match=r"pip install 'consortium\[inspect\]'"):
        read_inspect_log(tmp_path / "x.eval")


def test_a_file_that_is_not_an_inspect_log_is_one_line(tmp_path: Path) -> None:
    required("inspect_ai")
    from consortium.records.importers.inspect_logs import read_inspect_log

    bad = tmp_path / "bad.eval"
    bad.write_text("not a zip")
    with pytest.raises(RecordsError, match="not an Inspect log") as raised:
        read_inspect_log(bad)
    assert "\n" not in str(raised.value)


# --- lm-eval ---------------------------------------------------------------------------------


def samples_file(out: Path, model: str, task: str) -> Path:
    (found,) = sorted((out / f"tiny__{model}").glob(f"samples_{task}_*.jsonl"))
    return found


def test_the_lm_eval_files_are_named_as_lm_evals_readers_expect(lm_eval_out: Path) -> None:
    from lm_eval.utils import (
        get_file_task_name,
        get_results_filenames,
        get_sample_results_filenames,
    )

    from consortium.records.importers.lm_eval_logs import results_file, task_and_date

    names = [str(p) for p in sorted(lm_eval_out.rglob("*.json*"))]
    samples = get_sample_results_filenames(names)
    assert len(samples) == 4 and len(get_results_filenames(names)) == 2
    for name in samples:
        task, date = task_and_date(Path(name))
        assert task == get_file_task_name(Path(name).name)
        found = results_file(Path(name), date)
        assert found is not None and str(found) in get_results_filenames(names)


def test_an_lm_eval_multiple_choice_log_imports_letters_and_its_acc(lm_eval_out: Path) -> None:
    from consortium.records.importers.lm_eval_logs import read_lm_eval

    for model in LM_EVAL_MODELS:
        imported = read_lm_eval(samples_file(lm_eval_out, model, "tiny_mc"))
        assert len(imported.outputs) == QUESTIONS
        for output in imported.outputs:
            i = int(output.question_id)
            assert output.model == f"tiny/{model}"
            assert output.question.startswith(f"{mc_question(i)}\nAnswer:\n\nA. ")
            assert output.question.splitlines()[-5:] == [
                f"{LETTERS[k]}. {v}" for k, v in enumerate(options(i))
            ]
            assert output.reference == LETTERS[gold_position(i)]
            assert output.response == LETTERS[chosen_position(model, i)]
            assert output.source_correct is RIGHT[model](i)
            assert output.task == {"letters": "ABCDE"}
        assert [f.model for f in imported.files] == [f"tiny/{model}"] * 2


def test_an_lm_eval_generation_log_keeps_one_filter(lm_eval_out: Path) -> None:
    from consortium.records.importers.lm_eval_logs import read_lm_eval

    path = samples_file(lm_eval_out, "alpha", "tiny_qa")
    whole = read_lm_eval(path)
    assert any("filters number skipped" in n for n in whole.notes)
    # the raw generation never equals the target exactly: the `whole` filter marks all wrong
    assert {o.source_correct for o in whole.outputs} == {False}
    number = read_lm_eval(path, method="number")
    assert len(number.outputs) == QUESTIONS
    for output in number.outputs:
        i = int(output.question_id)
        assert output.question == f"{qa_question(i)}\nAnswer:"
        assert output.reference == str(qa_answer(i))
        assert output.response == f"The answer is {said_number('alpha', i)}"
        assert output.source_answer == str(said_number("alpha", i))
        assert output.source_correct is RIGHT["alpha"](i)
    with pytest.raises(RecordsError, match="no filter 'strict'"):
        read_lm_eval(path, method="strict")


def test_an_lm_eval_log_without_its_results_file_asks_for_the_model(
    lm_eval_out: Path, tmp_path: Path
) -> None:
    from consortium.records.importers.lm_eval_logs import read_lm_eval

    source = samples_file(lm_eval_out, "beta", "tiny_mc")
    alone = tmp_path / source.name
    alone.write_text(source.read_text())
    with pytest.raises(RecordsError, match=r"give the model name \(--model\)"):
        read_lm_eval(alone)
    named = read_lm_eval(alone, model="beta-7b")
    assert {o.model for o in named.outputs} == {"beta-7b"}
    assert len(named.files) == 1


# --- Both, through the command line ------------------------------------------------------------


def import_file(paths: list[Path], dataset: str, kind: str, out: Path, *extra: str) -> None:
    done = cli(
        "records", "import-file", *map(str, paths), "--dataset", dataset, "--kind", kind,
        "--out", str(out), *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_both_import_on_the_command_line_and_coordinate(
    inspect_logs: Path, lm_eval_out: Path, tmp_path: Path
) -> None:
    sets = {
        "inspect-mc": ([log_of(inspect_logs / "eval", "mc", m) for m in RIGHT], "choice", []),
        "inspect-qa": ([log_of(inspect_logs / "json", "qa", m) for m in RIGHT], "number", []),
        "lm-mc": ([samples_file(lm_eval_out, m, "tiny_mc") for m in LM_EVAL_MODELS], "choice", []),
        "lm-qa": (
            [samples_file(lm_eval_out, m, "tiny_qa") for m in LM_EVAL_MODELS],
            "number",
            ["--method", "number"],
        ),
    }
    for dataset, (paths, kind, extra) in sets.items():
        layout = "inspect" if dataset.startswith("inspect") else "lm-eval"
        import_file(paths, dataset, kind, tmp_path / dataset, "--layout", layout, *extra)
        records = load_records(tmp_path / dataset)
        assert records.manifest.questions == QUESTIONS
        table = records.table.to_pylist()
        assert len(table) == QUESTIONS * len(paths)
        # our graders agree with Inspect's scorers and lm-eval's metrics on every row
        assert all(r["correct"] is not None for r in table)
        assert [r["correct"] for r in table] == [r["source_correct"] for r in table]
        if layout == "inspect":
            assert all(not r["tokens_estimated"] for r in table)
    assert load_records(tmp_path / "inspect-mc").manifest.models == [f"mockllm/{m}" for m in RIGHT]
    out = tmp_path / "reports" / "coordination"
    done = cli(
        "coordinate", *[a for d in sets for a in ("--records", str(tmp_path / d))],
        "--out", str(out), "--generations", "2", "--popsize", "4", "--minibatch", "8",
        "--cache", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert [d["dataset"] for d in report["datasets"]] == list(sets)
    markdown = out.with_suffix(".md").read_text()
    for name in [*(f"mockllm/{m}" for m in RIGHT), *(f"tiny/{m}" for m in LM_EVAL_MODELS)]:
        assert name in markdown


@pytest.mark.parametrize(
    ("value", "correct", "score"),
    [("C", True, 1.0), ("I", False, 0.0), ("P", False, 0.5), ("N", False, 0.0), (True, True, 1.0),
     (0, False, 0.0), (0.7, False, 0.7), ("yes", True, 1.0), ({"a": 1}, None, None)],
)  # fmt: skip
def test_inspect_score_values_map_as_declared(value: Any, correct: bool | None, score: Any) -> None:
    from consortium.records.importers.inspect_logs import score_float

    mapped = score_float(value)
    assert mapped == score and (None if mapped is None else mapped >= 1.0) == correct


def test_an_lm_eval_row_whose_choices_are_letters_keeps_the_prompts_options(
    tmp_path: Path,
) -> None:
    """MMLU's form (0.4.13 schema as written): the prompt lists the options, the continuations
    are the letters."""
    from consortium.records.importers.lm_eval_logs import read_lm_eval

    prompt = "2+2?\nA. 3\nB. 4\nC. 5\nAnswer:"
    row = {
        "doc_id": 7, "doc": {"question": "2+2?"}, "target": "1",
        "arguments": {f"gen_args_{k}": {"arg_0": prompt, "arg_1": f" {c}"}
                      for k, c in enumerate("ABC")},
        "resps": [[["-4.0", "False"]], [["-1.0", "True"]], [["-3.0", "False"]]],
        "filtered_resps": [["-4.0", "False"], ["-1.0", "True"], ["-3.0", "False"]],
        "filter": "none", "metrics": ["acc", "acc_norm"], "acc": 1.0, "acc_norm": 1.0,
    }  # fmt: skip
    path = tmp_path / "samples_mmlu_x_2026-01-01T00-00-00.000000.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (output,) = read_lm_eval(path, model="m").outputs
    assert (output.question, output.reference, output.response) == (prompt, "B", "B")
    assert output.source_correct is True and output.task == {"letters": "ABC"}


# --- docs/records.md: "Bring your outputs", run as written ----------------------------------------


def docs_commands() -> list[str]:
    """The bash blocks of docs/records.md's "Bring your outputs" section, one command a line."""
    text = (ROOT / "docs" / "records.md").read_text()
    section = text.split("## Bring your outputs", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


@pytest.mark.e2e
def test_the_docs_bring_your_outputs_routes_run_as_written(
    inspect_logs: Path, lm_eval_out: Path, tmp_path: Path
) -> None:
    from tests.test_records_mapped import nested_row

    for name, skill, cost in (("a", 2, 0.001), ("b", 3, 0.002), ("c", 5, 0.01)):
        rows = [nested_row(i, skill, cost) for i in range(QUESTIONS)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copytree(inspect_logs / "eval", tmp_path / "logs")
    shutil.copytree(lm_eval_out, tmp_path / "lm-eval-out")
    commands = docs_commands()
    assert len(commands) == 5 and all(c.startswith("consortium ") for c in commands)
    binary = str(Path(sys.executable).parent / "consortium")
    for command in commands:
        done = subprocess.run(
            f"{binary} {command.removeprefix('consortium ')}",
            shell=True,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
        assert "warning:" not in done.stderr, done.stderr  # every source agrees with our grades
    expected = {
        "my-mc": {"model-a", "model-b", "model-c"},
        "inspect-mc": set(),
        "lm-eval-mc": set(),
    }
    expected["inspect-mc"] = {f"mockllm/{m}" for m in RIGHT}
    expected["lm-eval-mc"] = {f"tiny/{m}" for m in LM_EVAL_MODELS}
    for dataset, models in expected.items():
        records = load_records(tmp_path / "records" / dataset)
        assert set(records.manifest.models) == models
        rows = records.table.to_pylist()
        assert len(rows) == QUESTIONS * len(models)
        assert all(row["correct"] is row["source_correct"] for row in rows)
    report = json.loads((tmp_path / "out" / "my-mc.json").read_text())
    assert report["datasets"][0]["models"] == ["model-a", "model-b", "model-c"]


@pytest.mark.parametrize(
    ("target", "continuations", "gold"),
    [
        (1, [" 3", " 4", " 5"], 1),  # lm-eval's integer target: the index
        ("3", [" 6", " 5", " 3"], 2),  # a text target: the option with that text
        ("1", [" red", " blue"], 1),  # a text that is no option's: read as an index
        ("9", [" red", " blue"], None),
    ],
)
def test_an_lm_eval_target_is_an_index_or_an_options_text(
    target: object, continuations: list[str], gold: int | None
) -> None:
    from consortium.records.importers.lm_eval_logs import _gold_index

    assert _gold_index(target, continuations) == gold
