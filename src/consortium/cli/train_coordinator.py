"""`consortium train coordinator`: an answer-aware policy fitted on records, into a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import console, train_app
from consortium.coord.answers.kind_names import kinds_help
from consortium.core.costs import CostMeasure


@train_app.command("coordinator")
def train_coordinator(
    kind: Annotated[str, typer.Option(help=kinds_help() + ".")],
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
    from consortium.coord.answers.kind_names import FITTED_KINDS, check_kind
    from consortium.records.store import load_records
    from consortium.train.answers.best_kind import fit_kind

    check_kind(kind, FITTED_KINDS)  # before the records are read
    say_grade_warnings(load_records(records))
    command = f"consortium train coordinator --kind {kind} --records {records} --out {out}"
    command += f" --cost {cost}" if cost != "usd" else ""
    command += f" --stop {stop}" if stop != "accept" else ""
    policy = fit_kind(
        kind, records, lam=lam, cost=cost, stop=stop, created_by=command, cache_dir=cache,
        say=console.print,
    )  # fmt: skip
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
