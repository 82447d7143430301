"""The mixed records pool, the cost-aware reward, the warm start's shapes, rejection-sampling
fine-tuning and the shape test of `scripts/conductor_adaptive.py`."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consortium.coord.conductor.prompt import conductor_messages
from consortium.coord.conductor.templates import workflow_family
from consortium.coord.conductor.tools import WITHOUT_SCORER
from consortium.coord.conductor.workflow import parse_workflow
from consortium.pool.config import PoolConfig
from consortium.records import load_records
from consortium.records.prices import cost_of
from consortium.records.split import split_of
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.runtime.budget import Limits
from consortium.tasks.base import Task
from consortium.train.conductor.adaptive.families import (
    LABEL,
    agreement_with_pick,
    distil_examples,
    naming_the_pick,
    pick,
)
from consortium.train.conductor.grpo import training_rows
from consortium.train.conductor.measure import (
    SetFigures,
    baseline_workflows,
    paired_difference,
    shape_test,
)
from consortium.train.conductor.mixed_pool import MixedTasks, data_set_info, mixed_tasks
from consortium.train.conductor.rejection_sft import RejectionSettings, best_kept, rejection_sft
from consortium.train.conductor.workflow_reward import RIGHT, WRONG, Scored, WorkflowReward
from consortium.train.conductor.workflow_sampling import Sampler
from consortium.train.conductor.workflow_sft import SHAPES, example_workflow
from consortium.train.conductor.workflow_validity import workflow_shape


@pytest.fixture(scope="module")
def folders(small_records: dict[str, Path]) -> list[Path]:
    return [small_records[name] for name in ("gsm8k", "math", "humaneval", "date")]


@pytest.fixture(scope="module")
def mixed(folders: list[Path]) -> MixedTasks:
    return mixed_tasks(folders, "train", per_set=6, seed=0)


@pytest.fixture(scope="module")
def replay_workers(folders: list[Path]) -> Iterator[PoolConfig]:
    with ReplayServerProcess(None, records=folders) as server:
        yield replay_pool(load_records_replay(folders), server.base_url, max_retries=0)


def test_each_question_names_only_its_own_data_sets_models(mixed: MixedTasks) -> None:
    assert {t.meta["dataset"] for t in mixed.tasks} == {"gsm8k", "math", "humaneval", "date"}
    assert len({t.id for t in mixed.tasks}) == len(mixed.tasks) == 24
    pool = PoolConfig.model_validate(
        {
            "models": [
                {"name": n, "model": n, "base_url": "http://x"} for n in sorted(_all_models(mixed))
            ]
        }
    )
    rows = training_rows(
        mixed.tasks, pool, min_workers=2, max_steps=5, seed=3, chat=True, examples=False
    )
    sizes = set()
    for task, row in zip(mixed.tasks, rows, strict=True):
        workers = json.loads(row["workers"])
        assert set(workers) <= set(task.meta["roster"]), (task.id, workers)
        sizes.add(len(workers))
        assert "Example 1" not in row["prompt"][0]["content"]
    assert len(sizes) > 1  # random subsets, not the whole roster every time
    assert "humaneval" not in mixed.sets["gsm8k"].roster
    assert "codellama-34b-instruct" in mixed.sets["humaneval"].roster
    assert "codellama-34b-instruct" not in mixed.sets["gsm8k"].roster


def _all_models(mixed: MixedTasks) -> set[str]:
    return {m for info in mixed.sets.values() for m in info.roster}


def test_cost_unit_is_the_best_single_models_mean_on_the_train_split(
    small_records: dict[str, Path],
) -> None:
    info = data_set_info(small_records["math"])
    loaded = load_records(small_records["math"])
    train = [
        r
        for r in loaded.table.to_pylist()
        if r["sample"] == 0 and split_of("math", r["question_id"]) == "train"
    ]
    price = loaded.manifest.prices[info.best_model]
    best = [r for r in train if r["model"] == info.best_model]
    expected = sum(cost_of(price, r["tokens_in"], r["tokens_out"]) for r in best) / len(best)
    assert info.cost_unit == pytest.approx(expected)
    accuracy = {m: sum(bool(r["correct"]) for r in train if r["model"] == m) for m in info.roster}
    assert info.best_accuracy == pytest.approx(accuracy[info.best_model] / len(best))
    assert accuracy[info.best_model] == max(accuracy.values())


def test_the_mixed_grader_grades_each_task_by_its_own_kind(mixed: MixedTasks) -> None:
    for name in ("gsm8k", "date"):
        task = mixed.of(name)[0]
        assert mixed.grader.grade(task, f"The answer is {task.reference}.").correct
        assert not mixed.grader.grade(task, "The answer is 123456789.").correct


def test_cost_aware_reward_on_the_replay(mixed: MixedTasks, replay_workers: PoolConfig) -> None:
    task = mixed.of("gsm8k")[0]
    info = mixed.sets["gsm8k"]
    workers = list(info.roster)
    flows = baseline_workflows(workers, info)
    # the vote over all six GSM8K models has 7 steps: past a conductor's 5
    free = WorkflowReward(
        replay_workers, mixed.tasks, mixed.grader, max_steps=8, task_limits=Limits(max_calls=8)
    )
    priced = WorkflowReward(
        replay_workers,
        mixed.tasks,
        mixed.grader,
        max_steps=8,
        task_limits=Limits(max_calls=8),
        cost_weight=0.5,
    )
    try:
        rollouts = [
            (flows["best single"], task.id, workers),
            (flows["vote (all)"], task.id, workers),
        ]
        plain = free.score(rollouts)
        costed = priced.score([*rollouts, ("no workflow here", task.id, workers)])
        maths = mixed.of("math")[0]
        roster = list(mixed.sets["math"].roster)
        fixed = baseline_workflows(roster, mixed.sets["math"])
        single_math, moa, reflect = free.score(
            [(fixed[k], maths.id, roster) for k in ("best single", "moa", "reflect")]
        )
    finally:
        free.close()
        priced.close()
    # on replay a mixture of agents answers with its aggregator's (the best model's) sample;
    # self-reflection asks the best model again, and MATH's records hold one sample per question
    assert moa.calls == len(roster) and moa.right == single_math.right
    # the second call finds no sample and stops the run: two calls of three model steps
    assert reflect.shape == (3, 1, 0) and reflect.calls == 2 and not reflect.right
    assert reflect.failed and not moa.failed and not single_math.failed
    figures = SetFigures.of([moa, reflect, single_math])
    assert figures.stopped == pytest.approx(1 / 3)
    single, vote, invalid = costed
    assert single.calls == 1 and vote.calls == len(workers)
    assert vote.shape == (len(workers) + 1, len(workers), 1)
    assert 0 < single.cost < vote.cost
    for scored, base in zip(costed, plain, strict=False):
        assert base.reward in (RIGHT, WRONG)
        assert scored.reward == pytest.approx(base.reward - 0.5 * scored.cost / info.cost_unit)
    assert invalid.reward == 0.0 and not invalid.valid
    assert priced.history[-1]["parsed"] == pytest.approx(2 / 3)


def test_warm_start_examples_span_one_to_five_steps_with_and_without_tools() -> None:
    rng = random.Random(0)
    shapes = set()
    cascades = 0
    for n_workers in (2, 3, 6):
        workers = [f"m{i}" for i in range(n_workers)]
        for _ in range(60):
            text = example_workflow(n_workers, rng)
            shape = workflow_shape(text, workers)
            tools = shape.last in ("vote", "check")
            shapes.add((shape.steps, tools))
            if shape.steps >= 3 and not tools:
                assert shape.models >= min(2, n_workers)
            steps = parse_workflow(text, workers).steps
            if any(step.model == "accept" for step in steps):
                cascades += 1  # a cascade: a model answers after the accept, unless it stops
                assert not steps[-1].tool and steps[-1].access == ()
    assert {steps for steps, _ in shapes} == {1, 2, 3, 4, 5}
    assert {tools for _, tools in shapes} == {True, False}
    assert cascades > 0
    assert any(s.tools for s in SHAPES) and len(SHAPES) >= 8


def test_best_kept_takes_the_best_right_valid_workflow_per_question() -> None:
    rows = [
        {"prompt": "p1", "task_id": "a", "workers": "[]"},
        {"prompt": "p2", "task_id": "b", "workers": "[]"},
    ]
    texts = [["w1", "w2", "w3"], ["x1", "x2", "x3"]]
    scores = [
        Scored(0.9, True, True, 0.1, 1),
        Scored(0.95, True, True, 0.05, 1),
        Scored(0.5, True, False),
        Scored(0.5, True, False),
        Scored(0.0, False),
        Scored(0.5, True, False),
    ]
    kept = best_kept(rows, texts, scores)
    assert [(k["task_id"], k["completion"]) for k in kept] == [("a", "w2")]
    # contrastive: "a" had a wrong sample, so its best right one stays; all right keeps nothing
    assert best_kept(rows, texts, scores, contrastive=True) == kept
    all_right = [Scored(0.9, True, True, 0.1, 1)] * 3 + [Scored(0.95, True, True, 0.05, 1)] * 3
    assert [k["completion"] for k in best_kept(rows, texts, all_right)] == ["w1", "x1"]
    assert best_kept(rows, texts, all_right, contrastive=True) == []


def test_shape_test_tells_differing_sets_from_alike_ones() -> None:
    differ = {"a": ["1 step"] * 12 + ["5 steps"], "b": ["5 steps"] * 12 + ["1 step"]}
    alike = {"a": ["1 step", "5 steps"] * 6, "b": ["5 steps", "1 step"] * 6}
    assert (shape_test(differ).p_permutation or 1) < 0.01
    assert (shape_test(alike).p_permutation or 0) > 0.5
    single = shape_test({"a": ["1 step"] * 3, "b": ["1 step"] * 3, "c": ["invalid"]})
    assert single.p_permutation is None and single.note
    diff, low, high = paired_difference([True, True, False, True], [True, False, False, False])
    assert diff == pytest.approx(50.0) and low <= diff <= high


def test_rejection_sampling_rounds_fine_tune_and_resume(
    mixed: MixedTasks, replay_workers: PoolConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny model writes noise, so its sampler is scripted: per question one right
    one-step workflow (the best single model), one that does not parse."""
    from consortium.train.conductor.base_models import resolve_base

    base = resolve_base("tiny", tmp_path, 0)
    tasks = [mixed.of("gsm8k")[0], mixed.of("date")[0]]
    rows = [
        {
            "prompt": str(conductor_messages(t.question, t.meta["roster"], {}, examples=False)),
            "task_id": t.id,
            "workers": json.dumps(t.meta["roster"]),
        }
        for t in tasks
    ]

    def scripted(self: Sampler, batch: list[dict[str, Any]], **_: Any) -> list[list[str]]:
        found = []
        for row in batch:
            dataset = row["task_id"].split("/")[0]
            workers = json.loads(row["workers"])
            right = baseline_workflows(workers, mixed.sets[dataset])["best single"]
            found.append(["garbage", right])
        return found

    monkeypatch.setattr(Sampler, "complete", scripted)
    reward = WorkflowReward(replay_workers, mixed.tasks, mixed.grader, cost_weight=0.5)
    settings = RejectionSettings(rounds=2, questions_per_round=1, samples=2, epochs=1)
    out = tmp_path / "rft"
    try:
        rejection_sft(base, rows, reward, out, settings)
        first = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
        assert [r["round"] for r in first] == [1, 2]
        assert [r["rollouts"] for r in first] == [2, 4]
        assert all(r["parsed"] == 0.5 for r in first)
        kept = [json.loads(line) for line in (out / "kept.jsonl").read_text().splitlines()]
        right_ones = sum(r["kept"] for r in first)
        assert len(kept) == right_ones and all(k["completion"] != "garbage" for k in kept)
        assert (out / "model" / "config.json").is_file()
        for index in (1, 2):
            assert (out / f"round-{index}" / "config.json").is_file()
        # a third round on resume: the first two are not redone
        rejection_sft(base, rows, reward, out, RejectionSettings(3, 1, 2, epochs=1), resume=True)
        again = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
        assert [r["round"] for r in again] == [1, 2, 3] and again[:2] == first
        # only the last two rounds' models stay on disk (each is a whole model)
        assert [(out / f"round-{i}").is_dir() for i in (1, 2, 3)] == [False, True, True]
    finally:
        reward.close()


def test_sampler_groups_samples_per_row_and_batches_greedy_alike(tmp_path: Path) -> None:
    from consortium.train.conductor.base_models import resolve_base

    sampler = Sampler.load(resolve_base("tiny", tmp_path, 0))
    rows = [{"prompt": f"Question {i}: what is {i} + {i * 7}?"} for i in range(3)]
    sampled = sampler.complete(rows, samples=2, temperature=1.0, max_new_tokens=6, batch_size=2)
    assert [len(found) for found in sampled] == [2, 2, 2]
    batched = sampler.complete(rows, max_new_tokens=6, batch_size=3)
    alone = sampler.complete(rows, max_new_tokens=6, batch_size=1)
    assert batched == alone
    assert all(len(found) == 1 for found in alone)
    # min_p 1 keeps only the likeliest token: sampling at any temperature writes the greedy text
    hot = sampler.complete(rows, samples=2, temperature=5.0, min_p=1.0, max_new_tokens=6, seed=3)
    assert hot == [found * 2 for found in alone]
    assert sampler.complete(rows, samples=2, temperature=5.0, max_new_tokens=6, seed=3) != hot


def test_the_fixed_workflow_picked_on_train_follows_the_cost_weight() -> None:
    roster = ["big", "small", "tiny"]
    family = workflow_family(roster)
    # 3 alone, 6 ordered pairs then check, 3 thrice then vote and 3 then check, all then vote;
    # cascades: 6 ordered pairs around an accept, and 3 pairs (1 third model each) and 3 models
    # asked twice (2 third models each) then accept, then the third model
    assert len(family) == 3 + 6 + 3 + 3 + 1 + 6 + 3 + 6
    cascade = family["tiny x2, accept, big"].steps
    assert [s.model for s in cascade] == ["tiny", "tiny", "accept", "big"]
    assert cascade[2].visible == (0, 1) and cascade[3].visible == ()
    assert [s.model for s in family["small, accept, big"].steps] == ["small", "accept", "big"]
    for workflow in family.values():
        text = workflow.to_text(list(reversed(roster)))
        assert parse_workflow(text, list(reversed(roster)), max_steps=10, tools=WITHOUT_SCORER)
    task = Task("q", "?", "set", "train", "1", {"cost_unit": 1.0})

    def runs(right: int, cost: float) -> list[tuple[Task, Scored]]:
        return [(task, Scored(0.0, True, i < right, cost, 1)) for i in range(10)]

    scores = {"set": {"big": runs(9, 1.0), "small": runs(8, 0.1), "tiny": runs(8, 0.05)}}
    assert pick(scores, 0.0) == {"set": "big"}  # the most right answers
    assert pick(scores, 0.2) == {"set": "tiny"}  # 0.5 x 0.1 more right < 0.2 x 0.95 saved
    # equal reward at λ = 0: the cheaper
    assert pick({"set": {"small": runs(8, 0.1), "tiny": runs(8, 0.05)}}, 0.0) == {"set": "tiny"}


def test_distil_examples_write_each_sets_pick_in_the_prompts_own_numbering(
    mixed: MixedTasks, replay_workers: PoolConfig
) -> None:
    rows = training_rows(
        mixed.tasks, replay_workers, min_workers=99, max_steps=5, seed=3, chat=False,
        examples=False,
    )  # fmt: skip
    picks = {
        name: f"{info.roster[-1]}, accept, {info.roster[0]}" for name, info in mixed.sets.items()
    }
    examples = distil_examples(rows, mixed, picks, len(rows), seed=1)
    assert sorted(e["prompt"] for e in examples) == sorted(r["prompt"] for r in rows)
    of_prompt = {r["prompt"]: r for r in rows}
    orders = set()
    for example in examples:
        row = of_prompt[example["prompt"]]
        workers = json.loads(row["workers"])
        roster = mixed.sets[row["task_id"].split("/")[0]].roster
        assert sorted(workers) == sorted(roster)  # every worker of the set is shown
        orders.add(tuple(workers))
        think, _, lists = example["completion"].partition("</think>\n")
        first, last = roster[-1], roster[0]
        assert think == f" <think>3 steps: {first}, accept, {last}."
        steps = parse_workflow(lists, workers, max_steps=5, tools=WITHOUT_SCORER).steps
        assert [s.model for s in steps] == [first, "accept", last]
        assert lists.startswith(f"model_id = [{workers.index(first)}, 'accept', ")
    assert len(orders) > 1  # rosters are shuffled, so the numbers differ between prompts
    datasets = [of_prompt[e["prompt"]]["task_id"].split("/")[0] for e in examples]
    named = naming_the_pick(
        {"D": [e["completion"] for e in examples]}, datasets, picks, ["D"]
    )  # the report reads back the line the examples teach
    assert all(n == of > 0 for n, of in named["D"].values())
    by_name = distil_examples(rows, mixed, picks, len(rows), seed=1, by_name=True)
    for example, numbered in zip(by_name, examples, strict=True):
        workers = json.loads(of_prompt[example["prompt"]]["workers"])
        roster = mixed.sets[of_prompt[example["prompt"]]["task_id"].split("/")[0]].roster
        think, _, lists = example["completion"].partition("</think>\n")
        assert think + "</think>\n" in numbered["completion"]  # the same think line
        assert lists.startswith(f"model_id = [{roster[-1]!r}, 'accept', {roster[0]!r}]")
        steps = parse_workflow(lists, workers, max_steps=5, tools=WITHOUT_SCORER).steps
        assert [s.model for s in steps] == [roster[-1], "accept", roster[0]]


def test_agreement_with_the_pick_compares_models_tools_and_access_not_wording() -> None:
    picked = workflow_family(["a", "b", "c"])["b, accept, a"].to_text(["a", "b", "c"])
    same = (
        '<think>3 steps: b, accept, a.</think>\nmodel_id = [1, "accept", 0]\n'
        'subtasks = ["Go.", "", "Go."]\naccess_list = [[], [0], []]'
    )
    other_access = same.replace("[[], [0], []]", "[[], [0], [0]]")
    other_model = same.replace('[1, "accept", 0]', '[1, "accept", 2]')
    broken = same.replace("access_list = [[], [0], []]", "access_list = [[], [0],")
    texts = {
        "DISTIL": [same, other_access, other_model, broken, same],
        LABEL: [picked] * 5,
    }
    found = agreement_with_pick(texts, ["x", "x", "x", "x", "y"], ["DISTIL"])
    assert found == {"DISTIL": {"x": [1, 4], "y": [1, 1]}}
    # a workflow that names its models equals the pick numbered in the same prompt's roster
    named = same.replace('[1, "accept", 0]', '["b", "accept", "a"]')
    texts["DISTIL"] = [named, named.replace('"b"', '"c"'), same, broken, named]
    found = agreement_with_pick(texts, ["x"] * 4 + ["y"], ["DISTIL"], [["a", "b", "c"]] * 5)
    assert found == {"DISTIL": {"x": [2, 4], "y": [1, 1]}}
    assert agreement_with_pick(texts, ["x"] * 5, ["DISTIL"]) == {"DISTIL": {"x": [1, 5]}}


def test_naming_the_pick_reads_the_team_named_before_the_numbers() -> None:
    right = '<think>3 steps: b, accept, a.</think>\nmodel_id = [1, "accept", 0]'
    texts = {
        "DISTIL": [
            " " + right,
            right.replace('[1, "accept", 0]', '[2, "accept", 0]'),  # right team, wrong number
            right.replace("b, accept, a", "a"),  # another team
            'model_id = [1, "accept", 0]',  # no think line
            "<think>1 step: c.</think>\nmodel_id = [2]",
        ]
    }
    picks = {"x": "b, accept, a", "y": "c"}
    found = naming_the_pick(texts, ["x", "x", "x", "x", "y"], picks, ["DISTIL"])
    assert found == {"DISTIL": {"x": [2, 4], "y": [1, 1]}}


def test_the_claims_report_is_rebuilt_from_its_json_byte_for_byte() -> None:
    """`reports/conductor-adaptive.md` is what the builder writes from the committed JSON (no
    run time in either: a second run of the target must reproduce the text)."""

    from consortium.reports.conductor_adaptive.markdown import markdown

    reports = Path(__file__).resolve().parent.parent / "reports"
    committed = (reports / "conductor-adaptive.md").read_text()
    summary = json.loads((reports / "conductor-adaptive.json").read_text())
    command = re.search(r"Made by `([^`]*)`", committed)
    assert command is not None and "seconds" not in summary
    assert markdown(summary, command.group(1)) == committed
