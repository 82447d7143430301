"""`consortium records import-file` and `records reimport`: a user's own files (any layout, a
field map, several models) into one records folder, and that import run again from its recipe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from consortium.cli.app import console, records_app
from consortium.cli.records import say_grade_warnings

if TYPE_CHECKING:
    from consortium.records.rows import OutputRow
    from consortium.records.schema import AnswerKind, Manifest


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
    from consortium.records.layouts import import_files

    given = _ImportOptions(
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
        files=[(path, model) for path in paths or []] + _file_options(files or []),
        field_map=_map_options(field_map or []),
    )
    settings = _merged(given, _read_import_config(config) if config else _ImportOptions())
    layout_, dataset_, kind_, out_ = _required(settings)
    manifest, rows = import_files(
        layout_,
        dataset=dataset_,
        kind=kind_,
        model=settings.model,
        files=settings.files,
        field_map=settings.field_map,
        method=settings.method or "",
        mbpp_tests=settings.mbpp_tests,
        repo=settings.repo or "unknown",
        commit=settings.commit or "unknown",
        licence=settings.licence or "not stated",
        letters=settings.letters,
    )
    _write_imported(out_, manifest, rows)


@dataclass
class _ImportOptions:
    """`records import-file`'s settings, from the command line or a TOML file (None: not given)."""

    layout: str | None = None
    dataset: str | None = None
    kind: str | None = None
    out: Path | None = None
    model: str | None = None
    method: str | None = None
    mbpp_tests: Path | None = None
    repo: str | None = None
    commit: str | None = None
    licence: str | None = None
    letters: str | None = None
    files: list[tuple[Path, str | None]] = field(default_factory=list)
    field_map: dict[str, str] = field(default_factory=dict)


def _merged(given: _ImportOptions, config: _ImportOptions) -> _ImportOptions:
    """The command line over the TOML file: scalars it gives win, its files replace the file's,
    its --map entries override the file's entry by entry."""
    merged = {
        name: getattr(given, name) if getattr(given, name) is not None else getattr(config, name)
        for name in _ImportOptions.__dataclass_fields__
        if name not in ("files", "field_map")
    }
    return _ImportOptions(
        **merged,
        files=given.files or config.files,
        field_map={**config.field_map, **given.field_map},
    )


def _required(settings: _ImportOptions) -> tuple[str, str, AnswerKind, Path]:
    from consortium.records.errors import RecordsError
    from consortium.records.schema import answer_kind_named

    missing = [
        f"--{name}"
        for name in ("layout", "dataset", "kind", "out")
        if getattr(settings, name) is None
    ]
    if missing:
        raise RecordsError(
            f"records import-file: give {', '.join(missing)} (or set it in --config)"
        )
    if not settings.files:
        raise RecordsError(
            "records import-file: no source files (give PATH arguments, --file PATH=MODEL or "
            "[[files]] in --config)"
        )
    assert settings.layout and settings.dataset and settings.kind and settings.out
    kind = answer_kind_named(settings.kind, "--kind")
    return settings.layout, settings.dataset, kind, settings.out


def _file_options(items: list[str]) -> list[tuple[Path, str | None]]:
    """`--file PATH=MODEL` options; the path must exist."""
    from consortium.records.errors import RecordsError

    pairs: list[tuple[Path, str | None]] = []
    for item in items:
        path, sep, model = item.rpartition("=")
        if not sep or not path or not model.strip():
            raise RecordsError(f"--file {item!r}: expected PATH=MODEL, e.g. --file a.jsonl=gpt-4o")
        pairs.append((_existing(Path(path), f"--file {item}"), model.strip()))
    return pairs


def _existing(path: Path, given: str) -> Path:
    from consortium.records.errors import RecordsError

    if not path.exists():
        raise RecordsError(f"{given}: no such file or folder: {path}")
    return path


def _map_options(items: list[str]) -> dict[str, str]:
    from consortium.records.importers.field_paths import parse_map_items

    return parse_map_items(items)


_CONFIG_KEYS = (
    "layout",
    "dataset",
    "kind",
    "out",
    "model",
    "method",
    "mbpp_tests",
    "repo",
    "commit",
    "licence",
    "letters",
    "files",
    "map",
)


def _read_import_config(path: Path) -> _ImportOptions:
    """A TOML recipe; relative paths in it are relative to its folder."""
    import tomllib

    from consortium.records.errors import RecordsError

    try:
        data = tomllib.loads(_existing(path, "--config").read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise RecordsError(f"{path}: not valid TOML ({error})") from None
    unknown = [key for key in data if key not in _CONFIG_KEYS]
    if unknown:
        raise RecordsError(f"{path}: unknown key {unknown[0]!r}; known: {', '.join(_CONFIG_KEYS)}")
    texts = {key: _config_text(path, data, key) for key in _CONFIG_KEYS[:-2]}
    here = path.parent
    return _ImportOptions(
        layout=texts["layout"],
        dataset=texts["dataset"],
        kind=texts["kind"],
        out=None if texts["out"] is None else here / texts["out"],
        model=texts["model"],
        method=texts["method"],
        mbpp_tests=None if texts["mbpp_tests"] is None else here / texts["mbpp_tests"],
        repo=texts["repo"],
        commit=texts["commit"],
        licence=texts["licence"],
        letters=texts["letters"],
        files=_config_files(path, data.get("files", [])),
        field_map=_config_map(path, data.get("map", {})),
    )


def _config_text(path: Path, data: dict[str, Any], key: str) -> str | None:
    from consortium.records.errors import RecordsError

    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RecordsError(f"{path}: {key} must be a string, got {value!r}")
    return value


def _config_files(path: Path, files: Any) -> list[tuple[Path, str | None]]:
    from consortium.records.errors import RecordsError

    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("path"), str) for f in files
    ):
        raise RecordsError(
            f'{path}: files must be [[files]] tables with path = "…" and model = "…"'
        )
    pairs: list[tuple[Path, str | None]] = []
    for entry in files:
        file = path.parent / entry["path"]
        model = entry.get("model")
        pairs.append((_existing(file, f"{path}: files"), None if model is None else str(model)))
    return pairs


def _config_map(path: Path, table: Any) -> dict[str, str]:
    from consortium.records.errors import RecordsError
    from consortium.records.importers.field_paths import parse_map_items

    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise RecordsError(f'{path}: map must be a [map] table of field = "path" entries')
    return parse_map_items([f"{key}={value}" for key, value in table.items()])


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
