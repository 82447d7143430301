"""`consortium debates …`: the policies of when to talk on records folders of recorded debates,
and the learned rule of when to talk fitted into a folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from consortium.cli.app import console, debates_app

RecordsOption = Annotated[
    list[Path],
    typer.Option(
        "--records",
        help="A records folder of a recorded debate (consortium records import --only ford-…); "
        "repeat for several.",
    ),
]


@debates_app.command("report")
def debates_report(
    records: RecordsOption,
    out: Annotated[Path, typer.Option(help="The report to write (.md, and .json beside it).")],
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="Also play each folder's recorded debate over the HTTP replay (a server per "
            "folder, every question) and state how often it equals the report's.",
        ),
    ] = False,
) -> None:
    """Measure every policy of when to talk on each folder's test split (the vote, pick the
    stronger, the debate, stop after turn k, the learned rule fitted on train) and write the
    report.

    Example:

      consortium debates report --records records/ford-piqa-gpt35-gpt4-run3 --out out/debates.md
    """
    from consortium.evaluation.debates.figures import measure_folder
    from consortium.evaluation.debates.report import write_debates_report
    from consortium.records.store import load_records

    figures = [measure_folder(load_records(folder)) for folder in records]
    if http:
        figures = [
            replace(f, http=_over_http(folder)) for f, folder in zip(figures, records, strict=True)
        ]
    listed = " ".join(f"--records {folder}" for folder in records)
    flags = " --http" if http else ""
    write_debates_report(figures, out, f"consortium debates report {listed} --out {out}{flags}")
    console.print(f"wrote {out} ({len(figures)} folders)")


def _over_http(folder: Path) -> dict[str, int]:
    import tempfile

    from consortium.replay.debate_parity import debate_parity

    with tempfile.TemporaryDirectory() as work:
        parity = debate_parity(folder, Path(work))
    return {"compared": parity.compared, "equal": parity.equal, "repeated": parity.repeated}


@debates_app.command("fit-gate")
def debates_fit_gate(
    records: Annotated[
        Path, typer.Option(help="A records folder of a recorded debate (its train split is read).")
    ],
    out: Annotated[Path, typer.Option(help="The folder to write gate.json into.")],
) -> None:
    """Fit the rule of when to talk on a recorded debate's train split and write it, for
    `--policy debate:models=…:gate=FOLDER`.

    Example:

      consortium debates fit-gate --records records/ford-piqa-gpt35-davinci-run3 --out my-gate
    """
    from consortium.evaluation.debates.gate_fit import fit_folder_gate
    from consortium.evaluation.debates.report import kept_rule

    path, figures = fit_folder_gate(records, out)
    console.print(
        f"wrote {path}: {kept_rule(figures['threshold'])}; on the train split's "
        f"{figures['train_disputed']:.0f} disputed questions never talk {figures['never']:.2f} %, "
        f"always {figures['always']:.2f} %, the learned rule (5-fold) "
        f"{figures['learned_cross_validated']:.2f} %",
        highlight=False,
    )
