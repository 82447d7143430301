"""Write and read a records folder (manifest.json + outputs.parquet). The reader refuses what it
does not understand with one line: a missing file, a corrupt Parquet file, an unknown schema
version, a manifest or table that does not fit the format."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from consortium.records.errors import RecordsError
from consortium.records.rows import OutputRow, from_table, to_table
from consortium.records.schema import (
    COLUMNS,
    MANIFEST,
    OUTPUTS,
    SCHEMA_VERSION,
    TURN_COLUMNS,
    AnswerKind,
    Manifest,
)


@dataclass(frozen=True)
class Records:
    """A loaded data set: its manifest and its rows as an Arrow table (`table.to_pandas()`)."""

    folder: Path
    manifest: Manifest
    table: pa.Table

    def rows(self) -> list[OutputRow]:
        return from_table(self.table)


def write_records(folder: str | Path, manifest: Manifest, rows: Iterable[OutputRow]) -> Records:
    """Write a data set; each file is written beside its final name and renamed into place."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    table = to_table(rows)
    _check_table(table, manifest, folder)
    partial = folder / (OUTPUTS + ".partial")
    pq.write_table(table, partial, compression="zstd")
    os.replace(partial, folder / OUTPUTS)
    text = json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    partial_manifest = folder / (MANIFEST + ".partial")
    partial_manifest.write_text(text, encoding="utf-8")
    os.replace(partial_manifest, folder / MANIFEST)
    return Records(folder, manifest, table)


def read_manifest(folder: str | Path) -> Manifest:
    folder = Path(folder)
    if not folder.is_dir():
        raise RecordsError(f"records folder not found: {folder}")
    path = folder / MANIFEST
    if not path.is_file():
        raise RecordsError(f"{folder}: no {MANIFEST} (not a records folder, or an unfinished one)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordsError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise RecordsError(f"{path}: expected a JSON object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RecordsError(
            f"{path}: schema_version {version!r} is not understood by this Consortium "
            f"(it reads version {SCHEMA_VERSION})"
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise RecordsError(f"{path}: {where}: {first['msg']}") from None


@lru_cache(maxsize=64)
def folder_answer_kind(folder: str) -> AnswerKind:
    """A records folder's answer kind, its manifest read once per process (RecordsError as
    `read_manifest`)."""
    return read_manifest(folder).answer_kind


def load_records(folder: str | Path) -> Records:
    """The data set in `folder`, checked against the format; RecordsError otherwise."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    path = folder / OUTPUTS
    if not path.is_file():
        raise RecordsError(f"{folder}: no {OUTPUTS} beside {MANIFEST}")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RecordsError(f"{path}: not a readable Parquet file ({message})") from None
    _check_table(table, manifest, folder)
    return Records(folder, manifest, table)


def _check_table(table: pa.Table, manifest: Manifest, folder: Path) -> None:
    expected = TURN_COLUMNS if "turn" in table.schema.names else COLUMNS
    if table.schema.names != expected.names:
        missing = [name for name in expected.names if name not in table.schema.names]
        extra = [name for name in table.schema.names if name not in expected.names]
        raise RecordsError(
            f"{folder / OUTPUTS}: columns do not match schema version {SCHEMA_VERSION} "
            f"(missing: {', '.join(missing) or '-'}; unexpected: {', '.join(extra) or '-'})"
        )
    if manifest.protocol is not None and expected is COLUMNS:
        raise RecordsError(
            f"{folder}: the manifest names a recorded {manifest.protocol.kind} but "
            f"{OUTPUTS} has no turn columns"
        )
    for field in expected:
        actual = table.schema.field(field.name).type
        if actual != field.type:
            raise RecordsError(
                f"{folder / OUTPUTS}: column {field.name} is {actual}, expected {field.type}"
            )
    models = set(table.column("model").to_pylist())
    unknown = sorted(models - set(manifest.models))
    if unknown:
        raise RecordsError(
            f"{folder}: outputs.parquet has models the manifest does not list: {', '.join(unknown)}"
        )
