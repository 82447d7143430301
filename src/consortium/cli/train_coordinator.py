"""`consortium train coordinator`: an answer-aware policy fitted on records, into a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import console, train_app
from consortium.core.costs import CostMeasure


@train_app.command("coordinator")
def train_coordinator(
    kind: Annotated[
        str,
        typer.Option(
            help="auto (every kind below but trinity, fitted on train; the best train "
            "accuracy is kept, ties to the cheaper), vote (every model, weighted by train "
            "accuracy), scorer (every model; a logistic scorer of the answers' agreement, "
            "fitted on train, picks), scorer-cascade "
            "(FrugalGPT: models cheapest first, stop once the scorer is sure), model-switch "
            "(models in train-accuracy order until two answers agree), mot-cascade (cheap "
            "models' samples, escalate to a strong model when they disagree), single (the "
            "best model), example-filter (code: models in order, a sample at a time, until a "
            "program passes its docstring examples), filter-and-cluster (code: every model's "
            "samples, the largest cluster of programs that pass and behave alike) or trinity "
            "(multi-turn: each turn a head trained with sep-CMA-ES reads "
            "the answers so far and picks a model as Worker or Verifier, or submits)."
        ),
    ],
    records: Annotated[
        Path, typer.Option(help="A records folder; the policy is fitted on its train split.")
    ],
    out: Annotated[Path, typer.Option(help="The policy folder to write.")],
    lam: Annotated[
        float,
        typer.Option(
            help="λ of the train objective right − λ·cost (cost in units of the best single "
            "model's mean cost per question): 0 picks for accuracy alone.",
        ),
    ] = 0.0,
    cost: Annotated[
        CostMeasure,
        typer.Option(
            help="What the selection's cost is: usd, tokens or seconds (as recorded); the "
            "figures stay in dollars. A pool with prices of 0 wants tokens or seconds."
        ),
    ] = "usd",
    stop: Annotated[
        str,
        typer.Option(
            help="trinity only: accept (the paper's rule: stop at a Verifier's ACCEPT or after "
            "5 turns) or submit (the head may also submit the current answer at any turn)."
        ),
    ] = "accept",
    cache: Annotated[
        Path | None,
        typer.Option(
            help="Code records: cache folder for the programs' sandbox runs on their docstring "
            "examples (the one `consortium coordinate` fills)."
        ),
    ] = Path(".cache/coordination"),
) -> None:
    """Fit an answer-aware policy on a records folder's train split and write it as a policy
    folder (policy.json: kind, answer kind, models, weights / order / threshold, the prices it
    assumed, its train and test figures on the records, the records' hash). Every command takes
    the folder with --policy and runs it live on any pool that has its models.

    Example:

      consortium train coordinator --kind mot-cascade --records records/date \\
        --out policies/date-cascade
      consortium eval --pool replay.toml --tasks records:path=records/date:split=test \\
        --policy policies/date-cascade
    """
    from consortium.cli.records import say_grade_warnings
    from consortium.coord.answers.folder import write_policy
    from consortium.records.store import load_records
    from consortium.train.answer_policy import fit_answer_policy
    from consortium.train.best_kind import AUTO, fit_best_kind

    say_grade_warnings(load_records(records))
    command = f"consortium train coordinator --kind {kind} --records {records} --out {out}"
    command += f" --cost {cost}" if cost != "usd" else ""
    command += f" --stop {stop}" if stop != "accept" else ""
    if kind == AUTO:
        policy = fit_best_kind(
            records, lam=lam, cost=cost, created_by=command, cache_dir=cache, say=console.print
        )
    else:
        policy = fit_answer_policy(
            kind, records, lam=lam, created_by=command, cost=cost, stop=stop, cache_dir=cache
        )
    write_policy(out, policy)
    console.print(
        f"{policy.name}: {policy.selection}\n"
        f"  train {policy.train.accuracy:.2f} % ({policy.train.questions} questions, "
        f"${policy.train.usd_per_question:.5f} and {policy.train.calls_per_question:.2f} calls "
        f"a question); test {policy.test.accuracy:.2f} % ({policy.test.questions} questions, "
        f"${policy.test.usd_per_question:.5f}, {policy.test.calls_per_question:.2f} calls)\n"
        f"  -> {out}",
        highlight=False,
        markup=False,
        emoji=False,
    )
