"""A single model's policy folder on a records set: where a learning server starts (the cheapest
model, the most accurate one), with its figures on both splits as any fitted folder states."""

from __future__ import annotations

from pathlib import Path

from consortium.coord.answers.folder import AnswerPolicy
from consortium.coord.answers.rules import SingleAnswer
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import train_accuracy, train_cost
from consortium.evaluation.recorded.tables import outcome_table
from consortium.records.store import load_records
from consortium.train.answers.policy import figures_of, fit_answer_policy


def single_policy(records_folder: Path, which: str) -> AnswerPolicy:
    """The single-model folder of `which`: "cheapest" (of the models that answer every train
    question: one recorded on a part of them would fail the rest) or "most-accurate" on the
    train split, or a model's name."""
    records = load_records(records_folder)
    table = outcome_table(records)
    if which == "cheapest":  # among the models with a sample of every question, if any has
        train = table.indices("train")
        whole = [m for m in range(table.n_models) if all(table.samples[q][m] for q in train)]
        costs = train_cost(table)
        model = table.models[min(whole or range(table.n_models), key=lambda m: costs[m])]
    elif which == "most-accurate":
        model = table.models[int(train_accuracy(table).argmax())]
    else:
        model = which
    fitted = fit_answer_policy("single", records_folder).policy
    run = run_rule(table, SingleAnswer(model), "single")
    manifest = records.manifest
    return fitted.model_copy(
        update={
            "name": f"single-{which}:{manifest.dataset}",
            "models": [model],
            "params": SingleAnswer(model).params(),
            "prices": {m: p for m, p in manifest.prices.items() if m == model},
            "train": figures_of(run, table.indices("train")),
            "test": figures_of(run, table.indices("test")),
            "selection": f"{which} single model on train: {model}",
        }
    )
