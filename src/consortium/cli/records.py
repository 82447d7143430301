"""`consortium records …`: import recorded outputs into the records format, and inspect a folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.cli.app import console, err_console, records_app

if TYPE_CHECKING:
    from consortium.records.store import Records


@records_app.command("import")
def records_import(
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            envvar="CONSORTIUM_REAL_OUTPUTS",
            help="The real-outputs folder (rereading/, modelswitch/, mot-cascade/, "
            "humaneval-runs/, routerdc/, benchmarks/).",
        ),
    ] = Path("../shared/data"),
    out: Annotated[Path, typer.Option(help="Where each data set's folder is written.")] = Path(
        "records"
    ),
    only: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated corpora to import (default: every corpus of single outputs; "
            "the recorded debates, ford-*, by name: make debates)."
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Import only the first N questions of each (quick runs).")
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(help="Write the import table here (.md, plus .json and -disagreements.csv)."),
    ] = None,
) -> None:
    """Import every recorded corpus into one folder per data set (manifest.json +
    outputs.parquet), re-grading each output with the project's graders.

    Example:

      consortium records import --out records --report out/records-import.md
    """
    from consortium.records.corpora import BY_DEFAULT, RECIPES
    from consortium.records.errors import RecordsError

    names = [n for n in only.split(",") if n] if only else list(BY_DEFAULT)
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        raise RecordsError(f"--only: unknown corpus {unknown[0]!r}; known: {', '.join(RECIPES)}")
    written = _import_corpora(names, data, out, limit)
    if report is not None:
        command = (
            "consortium records import"
            + (f" --only {only}" if only else "")
            + (f" --limit {limit}" if limit else "")
            + f" --report {report}"
        )
        _write_import_report(written, report, command)


def _import_corpora(names: list[str], data: Path, out: Path, limit: int | None) -> list[Records]:
    """Each corpus imported into OUT/NAME, with a progress bar while it is graded and a line
    (and its grade warnings) when it is written."""
    from rich.progress import Progress, TaskID

    from consortium.records.corpora import import_corpus
    from consortium.records.store import write_records

    written = []
    with Progress(console=err_console, transient=True) as bar:
        for name in names:
            task = bar.add_task(f"{name}: grading", total=None)

            def advance(done: int, total: int, task: TaskID = task) -> None:
                bar.update(task, completed=done, total=total)

            manifest, rows = import_corpus(name, data, limit=limit, progress=advance)
            written.append(write_records(out / name, manifest, rows))
            bar.remove_task(task)
            err_console.print(
                f"{name}: {len(rows)} rows, {manifest.questions} questions -> {out / name}"
            )
            say_grade_warnings(written[-1])
    return written


def _write_import_report(written: list[Records], report: Path, command: str) -> None:
    from consortium.evaluation.debates.import_lines import debate_import_lines
    from consortium.records.report import write_report

    summaries, disagreements = write_report(written, report, command, debate_import_lines(written))
    console.print(
        f"wrote {report} ({len(summaries)} data set × model rows, "
        f"{len(disagreements)} disagreements)"
    )


@records_app.command("show")
def records_show(
    folder: Annotated[
        Path, typer.Argument(help="A records folder (manifest.json + outputs.parquet).")
    ],
) -> None:
    """Check a records folder against the format and print its table: per model, questions,
    samples, accuracy by our graders and by the source.

    Example:

      consortium records show records/gsm8k
    """
    from consortium.records.report import summarise
    from consortium.records.store import load_records

    records = load_records(folder)
    m = records.manifest
    console.print(
        f"{m.dataset}: {m.answer_kind}, {m.questions} questions, {records.table.num_rows} rows, "
        f"schema {m.schema_version}"
    )
    say_grade_warnings(records)
    summaries, _ = summarise(records)
    for s in summaries:
        console.print(
            f"  {s.model}: {s.questions} questions, {s.samples} samples, ours "
            f"{'—' if s.ours is None else f'{s.ours:.2f}'}%, source "
            f"{'—' if s.source is None else f'{s.source:.2f}'}%, agreement "
            f"{'—' if s.agreement is None else f'{s.agreement:.2f}'}%",
            highlight=False,
        )


@records_app.command("report")
def records_report(
    folders: Annotated[
        list[Path], typer.Argument(help="Records folders (or one folder holding them).")
    ],
    report: Annotated[
        Path, typer.Option(help="The table to write (.md, plus .json and -disagreements.csv).")
    ],
) -> None:
    """Write the import table of records folders already imported (no re-grading).

    Example:

      consortium records report records --report out/records-import.md
    """
    from consortium.evaluation.debates.import_lines import debate_import_lines
    from consortium.records.report import write_report
    from consortium.records.store import load_records

    found: list[Path] = []
    for folder in folders:
        inside = sorted(p.parent for p in folder.glob("*/manifest.json"))
        found += inside if inside and not (folder / "manifest.json").exists() else [folder]
    loaded = [load_records(folder) for folder in found]
    order = _corpus_order()
    loaded.sort(key=lambda r: order.get(r.manifest.dataset, len(order)))
    listed = " ".join(str(f) for f in folders)
    for records in loaded:
        say_grade_warnings(records)
    summaries, disagreements = write_report(
        loaded,
        report,
        f"consortium records report {listed} --report {report}",
        debate_import_lines(loaded),
    )
    console.print(
        f"wrote {report} ({len(summaries)} data set × model rows, "
        f"{len(disagreements)} disagreements)"
    )


def _corpus_order() -> dict[str, int]:
    from consortium.records.corpora import RECIPES

    return {name: index for index, name in enumerate(RECIPES)}


def say_grade_warnings(records: Records) -> None:
    """Print, loudly, each model whose verdicts disagree with the source's."""
    from consortium.records.agreement import grade_warnings

    for warning in grade_warnings(records):
        err_console.print(warning.line(), style="bold yellow", highlight=False, markup=False)
