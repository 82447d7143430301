"""`consortium coordinate`: answer-aware coordinators and baselines on records folders → report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from consortium.cli.app import app, console, err_console
from consortium.core.costs import CostMeasure


@app.command("coordinate")
def coordinate(
    records: Annotated[
        list[Path], typer.Option("--records", help="A records folder (repeat for several).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Report path stem (.md, .json and one frontier .png per set); `make "
            "coordination` writes the committed reports/coordination."
        ),
    ] = Path("out/coordination"),
    generations: Annotated[int, typer.Option(help="sep-CMA-ES generations per λ.")] = 25,
    popsize: Annotated[int, typer.Option(help="Candidates per generation.")] = 16,
    minibatch: Annotated[int, typer.Option(help="Training questions per generation.")] = 64,
    routers: Annotated[
        bool,
        typer.Option(
            "--routers/--no-routers",
            help="Also the kNN and MLP question-only routers (all-MiniLM-L6-v2 embeddings).",
        ),
    ] = False,
    transcript_text: Annotated[
        bool,
        typer.Option(
            "--transcript-text/--no-transcript-text",
            help="Also TRINITY λ=0 with the head reading the transcript's text (the static "
            "MiniLM feature of the question and the answers so far, 16 principal components): "
            "the ablation of the structured features. Distils the static encoder on first use.",
        ),
    ] = False,
    optimizer_table: Annotated[
        bool,
        typer.Option(
            "--optimizer-table/--no-optimizer-table",
            help="Also train sep-CMA-ES, REINFORCE, random search and imitation (3 seeds each).",
        ),
    ] = False,
    verdicts: Annotated[
        Literal["ours", "source"],
        typer.Option(
            help="Whose verdicts grade the samples: 'ours' (each records set's grader) or "
            "'source' (the verdicts recorded where the outputs came from, e.g. RouterBench's "
            "own, on which its published accuracies rest). A question some sample of which "
            "has no verdict is left out; a set with none to grade stops with its reason.",
        ),
    ] = "ours",
    cost: Annotated[
        CostMeasure,
        typer.Option(
            help="What cost means for the selections, λ, the cost target and the report: usd "
            "(the records' dollars), tokens (tokens in + out as recorded) or seconds (each "
            "call's recorded wall time). A pool with prices of 0 (local models) wants tokens or "
            "seconds.",
        ),
    ] = "usd",
    cache: Annotated[
        Path | None, typer.Option(help="Cache folder for the code checks' sandbox runs.")
    ] = Path(".cache/coordination"),
) -> None:
    """Every policy (single models, votes, ModelSwitch, MoT and FrugalGPT cascades, the learned
    scorer, multi-turn TRINITY at several λ; for programs also the example filter and filter and
    cluster, checked on each prompt's docstring examples in the sandbox) on each data set's train
    split, reported on its test split. A family the pool cannot form is left out, and a selection
    the train split cannot make (every candidate ties on train) is said, not made.

    Examples:

    consortium coordinate --records records/gsm8k --records records/math --out out/coordination

    consortium coordinate --records records/mine --cost tokens --out out/mine   # prices of 0
    """
    from consortium.reports.coordination.command import CoordinationRequest, run_coordination
    from consortium.train.trinity.recorded_turns import Budget

    request = CoordinationRequest(
        records,
        out,
        Budget(generations, popsize, minibatch),
        cache_dir=cache,
        routers=routers,
        transcript_text=transcript_text,
        optimizer_seeds=(0, 1, 2) if optimizer_table else (),
        verdicts=verdicts,
        cost=cost,
    )
    summaries = run_coordination(request, log=lambda line: err_console.print(line, markup=False))
    for s in summaries:
        best = f"best single {s['best_single']} {s['best_single_accuracy']:.2f}"
        if s["best_single_untold"]:
            best = "train split cannot tell the single models apart"
        console.print(
            f"{s['dataset']}: {best}; cost in {s['cost_measure']}; report {out.with_suffix('.md')}",
            markup=False,
            highlight=False,
        )
        for line in s["selection_notes"]:
            console.print(f"  {line}", markup=False, highlight=False)
