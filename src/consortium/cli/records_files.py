"""`consortium records import-file` and `records reimport`: a user's own files (any layout, a
field map, several models) into one records folder, and that import run again from its recipe."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from consortium.cli.app import console, records_app
from consortium.cli.records import say_grade_warnings

if TYPE_CHECKING:
    from consortium.records.rows import OutputRow
    from consortium.records.schema import Manifest


@records_app.command("import-file")
def records_import_file(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Source files (or folders) of one layout, all of --model's outputs."),
    ] = None,
    files: Annotated[
        list[str] | None,
        typer.Option(
            "--file", help="PATH=MODEL: a file and the model whose outputs it holds (repeat)."
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            help="fields (any JSONL, JSON, CSV, Parquet file or datasets folder, read through "
            "--map), inspect (Inspect AI .eval / .json logs), lm-eval (lm-evaluation-harness "
            "--log_samples files), rereading, modelswitch, mot-cascade, humaneval-runs, "
            "routerbench, split2-choice or split2-sampled."
        ),
    ] = None,
    field_map: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="FIELD=PATH (repeat), layout fields: where each field is in a row, as keys "
            "joined by dots with \\[n] indexes (question.stem, vanilla.generation[0]). Fields: "
            "question and response (required), reference, id, options, correct, model, sample, "
            "tokens_in, tokens_out, cost_usd.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="A TOML file with any of layout, dataset, kind, out, model, method, repo, "
            "commit, licence, letters, a \\[map] table and \\[\\[files]] tables (path, "
            "model); the options given here win."
        ),
    ] = None,
    dataset: Annotated[str | None, typer.Option(help="The data set's name.")] = None,
    kind: Annotated[
        str | None, typer.Option(help="Answer kind: number, latex, choice, code, date or text.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="The records folder to write.")] = None,
    model: Annotated[
        str | None, typer.Option(help="Model name, where neither the file nor --file says it.")
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(
            help="rereading: the method object (cot, vanilla …); lm-eval: the filter whose "
            "answers the file keeps (flexible-extract …; default the first)."
        ),
    ] = None,
    mbpp_tests: Annotated[
        Path | None, typer.Option(help="routerbench MBPP: an mbpp.jsonl with the tasks' tests.")
    ] = None,
    repo: Annotated[
        str | None, typer.Option(help="Where the files come from (for the manifest).")
    ] = None,
    commit: Annotated[str | None, typer.Option(help="The source's commit (for the manifest).")] = (
        None
    ),
    licence: Annotated[str | None, typer.Option(help="The source's licence note.")] = None,
    letters: Annotated[
        str | None,
        typer.Option(
            help="kind choice: the letters the questions offer, e.g. ABCDEFGHIJ; the import "
            "and every reader of the folder grade with them (default: read from each "
            "question's options)."
        ),
    ] = None,
) -> None:
    """Import files as one data set, naming the data set, its answer kind and each file's model
    on the command line. The manifest keeps the recipe: `consortium records reimport OUT` runs it
    again.

    Three files of three models, any shape, read through a field map (options joined into the
    question as "A. text" lines; a reference given as an option's index or text read as its
    letter):

      consortium records import-file --layout fields \\
        --file a.jsonl=gpt-4o --file b.jsonl=gemini-1.5-pro --file c.jsonl=llama-3.1-70b \\
        --map question=question.stem --map options=question.choices \\
        --map reference=answerKey --map response=vanilla.generation[0] \\
        --dataset mine --kind choice --out records/mine

    The same from a TOML file (layout, dataset, kind, out, a \\[map] table, \\[\\[files]] tables
    with path and model; options given on the command line win):

      consortium records import-file --config mine.toml

    A file of a known layout:

      consortium records import-file a.jsonl --layout rereading --model m \\
        --dataset gsm8k --kind number --out records/mine
    """
    from consortium.records.import_settings import (
        ImportSettings,
        file_options,
        import_with,
        read_import_config,
    )
    from consortium.records.importers.field_paths import parse_map_items

    given = ImportSettings(
        layout=layout,
        dataset=dataset,
        kind=kind,
        out=out,
        model=model,
        method=method,
        mbpp_tests=mbpp_tests,
        repo=repo,
        commit=commit,
        licence=licence,
        letters=letters,
        files=[(path, model) for path in paths or []] + file_options(files or []),
        field_map=parse_map_items(field_map or []),
    )
    settings = given.over(read_import_config(config) if config else ImportSettings())
    imported = import_with(settings)
    _write_imported(imported.out, imported.manifest, imported.rows)


def _write_imported(out: Path, manifest: Manifest, rows: list[OutputRow]) -> None:
    from consortium.records.store import write_records

    written = write_records(out, manifest, rows)
    console.print(
        f"{manifest.dataset}: {len(rows)} rows, {manifest.questions} questions, models "
        f"{', '.join(manifest.models)} -> {out}",
        highlight=False,
    )
    say_grade_warnings(written)


@records_app.command("reimport")
def records_reimport(
    folder: Annotated[
        Path, typer.Argument(help="A records folder written by `records import-file`.")
    ],
    out: Annotated[
        Path | None, typer.Option(help="Write here instead of into FOLDER itself.")
    ] = None,
) -> None:
    """Import a folder's source files again by the recipe its manifest stores (layout, files
    with their models, field map, data set, kind): after the files changed, or to check that
    the same files give the same folder.

    Example:

      consortium records reimport records/mine
    """
    from consortium.records.errors import RecordsError
    from consortium.records.layouts import reimport
    from consortium.records.store import read_manifest

    recipe = read_manifest(folder).recipe
    if recipe is None:
        raise RecordsError(
            f"{folder}: its manifest stores no import recipe (only `consortium records "
            "import-file` writes one; a corpus of `consortium records import` is imported again "
            "with `consortium records import --only NAME`)"
        )
    manifest, rows = reimport(recipe)
    _write_imported(out or folder, manifest, rows)
