"""Any file (or folder) of a known source layout as a data set: the layout, data set name, answer
kind and model come from the command line, so another file of the same layout needs no code."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from consortium.records.build import Part, build_dataset
from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport
from consortium.records.importers.humaneval_runs import read_humaneval_runs
from consortium.records.importers.inspect_logs import read_inspect_log
from consortium.records.importers.lm_eval_logs import read_lm_eval
from consortium.records.importers.mapped import check_aligned, read_mapped
from consortium.records.importers.modelswitch import read_modelswitch
from consortium.records.importers.motcascade import read_motcascade
from consortium.records.importers.rereading import read_rereading
from consortium.records.importers.routerbench import load_mbpp_tests, read_routerbench
from consortium.records.importers.split2 import read_split2
from consortium.records.letters import checked_letters, declare_letters
from consortium.records.rows import OutputRow
from consortium.records.schema import AnswerKind, ImportRecipe, Manifest, RecipeFile


def _model(model: str | None, layout: str) -> str:
    if not model:
        raise RecordsError(f"layout {layout}: give the model name (--model)")
    return model


Reader = Callable[[Path, str | None, str, Path | None], SourceImport]
FIELDS_LAYOUT = "fields"
"""Any JSONL / JSON / CSV / Parquet file or `datasets` folder, read through a field map."""


def _mapped(field_map: Mapping[str, str]) -> Reader:
    return lambda path, model, _m, _t: read_mapped(path, model, field_map)


LAYOUTS: dict[str, Reader] = {
    "rereading": lambda path, model, method, _: read_rereading(
        path, _model(model, "rereading"), method or "cot"
    ),
    "modelswitch": lambda path, model, _m, _t: read_modelswitch(path, model),
    "mot-cascade": lambda path, model, _m, _t: read_motcascade(path, _model(model, "mot-cascade")),
    "humaneval-runs": lambda path, model, _m, _t: read_humaneval_runs(path, model),
    "routerbench": lambda path, _model_, _m, tests: read_routerbench(
        path, mbpp_tests=load_mbpp_tests(tests) if tests else None
    ),
    "split2-choice": lambda path, _model_, _m, _t: read_split2(path, choice=True),
    "split2-sampled": lambda path, _model_, _m, _t: read_split2(path, choice=False),
    "inspect": lambda path, model, _m, _t: read_inspect_log(path, model),
    "lm-eval": lambda path, model, method, _t: read_lm_eval(path, model, method),
    FIELDS_LAYOUT: _mapped({}),  # the map comes with import_files (field_map)
}


def import_files(
    layout: str,
    paths: Sequence[Path] = (),
    *,
    dataset: str,
    kind: AnswerKind,
    model: str | None = None,
    files: Sequence[tuple[Path, str | None]] = (),
    field_map: Mapping[str, str] | None = None,
    method: str = "",
    mbpp_tests: Path | None = None,
    repo: str = "unknown",
    commit: str = "unknown",
    licence: str = "not stated",
    created_by: str = "consortium records import-file",
    limit: int | None = None,
    letters: str | None = None,
) -> tuple[Manifest, list[OutputRow]]:
    """`paths` hold `model`'s outputs, `files` pair each path with its own model; the manifest
    keeps the recipe (absolute paths) that `consortium records reimport` runs again. `letters`
    declares a choice data set's letters (checked against every question's options)."""
    if layout not in LAYOUTS:
        raise RecordsError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    if field_map and layout != FIELDS_LAYOUT:
        raise RecordsError(f"a field map (--map) is for --layout {FIELDS_LAYOUT}, not {layout}")
    if letters is not None:
        if kind != "choice":
            raise RecordsError(f"--letters is for --kind choice, not {kind}")
        letters = checked_letters(letters)
    pairs = [(path, model) for path in paths] + [(path, m or model) for path, m in files]
    if not pairs:
        raise RecordsError("no source files given")
    read = _mapped(field_map or {}) if layout == FIELDS_LAYOUT else LAYOUTS[layout]
    imported = [read(path, m, method, mbpp_tests) for path, m in pairs]
    if layout == FIELDS_LAYOUT:
        check_aligned(imported, field_map or {})
    if letters is not None:
        imported = [declare_letters(source, letters) for source in imported]
    parts = [
        Part(source, repo, commit, path.parent)
        for source, (path, _) in zip(imported, pairs, strict=True)
    ]
    manifest, rows = build_dataset(
        dataset, kind, parts, licence=licence, created_by=created_by, limit=limit
    )
    recipe = ImportRecipe(
        layout=layout,
        dataset=dataset,
        kind=kind,
        files=[RecipeFile(path=str(path.resolve()), model=m) for path, m in pairs],
        map=dict(field_map or {}),
        method=method,
        mbpp_tests=None if mbpp_tests is None else str(mbpp_tests.resolve()),
        repo=repo,
        commit=commit,
        licence=licence,
        limit=limit,
        letters=letters,
    )
    notes = list(dict.fromkeys(manifest.notes))  # each file's reader states the same choices
    update = {"recipe": recipe, "notes": notes, "letters": letters}
    return manifest.model_copy(update=update), rows


def reimport(recipe: ImportRecipe) -> tuple[Manifest, list[OutputRow]]:
    """The data set a stored recipe describes, imported again from its files."""
    return import_files(
        recipe.layout,
        dataset=recipe.dataset,
        kind=recipe.kind,
        files=[(Path(file.path), file.model) for file in recipe.files],
        field_map=recipe.map,
        method=recipe.method,
        mbpp_tests=None if recipe.mbpp_tests is None else Path(recipe.mbpp_tests),
        repo=recipe.repo,
        commit=recipe.commit,
        licence=recipe.licence,
        limit=recipe.limit,
        letters=recipe.letters,
    )
