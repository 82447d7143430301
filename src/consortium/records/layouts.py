"""Any file (or folder) of a known source layout as a data set: the layout, data set name, answer
kind and model come from the command line, so another file of the same layout needs no code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from consortium.records.build import Part, build_dataset
from consortium.records.errors import RecordsError
from consortium.records.importers.base import SourceImport
from consortium.records.importers.humaneval_runs import read_humaneval_runs
from consortium.records.importers.modelswitch import read_modelswitch
from consortium.records.importers.motcascade import read_motcascade
from consortium.records.importers.rereading import read_rereading
from consortium.records.importers.routerbench import load_mbpp_tests, read_routerbench
from consortium.records.importers.split2 import read_split2
from consortium.records.rows import OutputRow
from consortium.records.schema import AnswerKind, Manifest


def _model(model: str | None, layout: str) -> str:
    if not model:
        raise RecordsError(f"layout {layout}: give the model name (--model)")
    return model


Reader = Callable[[Path, str | None, str, Path | None], SourceImport]
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
}


def import_files(
    layout: str,
    paths: list[Path],
    *,
    dataset: str,
    kind: AnswerKind,
    model: str | None = None,
    method: str = "",
    mbpp_tests: Path | None = None,
    repo: str = "unknown",
    commit: str = "unknown",
    licence: str = "not stated",
    created_by: str = "consortium records import-file",
    limit: int | None = None,
) -> tuple[Manifest, list[OutputRow]]:
    if layout not in LAYOUTS:
        raise RecordsError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    read = LAYOUTS[layout]
    parts = [
        Part(read(path, model, method, mbpp_tests), repo, commit, path.parent) for path in paths
    ]
    return build_dataset(dataset, kind, parts, licence=licence, created_by=created_by, limit=limit)
