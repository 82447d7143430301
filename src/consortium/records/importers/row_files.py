"""The rows of a user's file for the field-map importer: JSONL, JSON (a list, or an object
holding one list), CSV, Parquet, or a Hugging Face `datasets` folder saved with `save_to_disk`."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.base import read_json, read_jsonl
from consortium.records.importers.field_paths import kind_of

HF_EXTRA = "pip install 'consortium[hf]'"


def _json_rows(path: Path) -> list[Any]:
    data = read_json(path)
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        lists = [key for key, value in data.items() if isinstance(value, list)]
        if len(lists) == 1:
            return list(data[lists[0]])
        found = f"it holds lists under {', '.join(lists)}" if lists else "it holds no list"
        raise RecordsError(f"{path}: expected a list of rows, or an object holding one ({found})")
    raise RecordsError(f"{path}: expected a list of rows, got {kind_of(data)}")


def _csv_rows(path: Path) -> list[Any]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [
            {key: (None if value == "" else value) for key, value in row.items()}
            for row in csv.DictReader(handle)
        ]


def _parquet_rows(path: Path) -> list[Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(pq.read_table(path).to_pylist())
    except (pa.ArrowException, OSError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RecordsError(f"{path}: not a readable Parquet file ({first})") from None


def _datasets_rows(path: Path) -> list[Any]:
    try:
        import datasets
    except ImportError:
        raise RecordsError(
            f"{path}: reading a Hugging Face datasets folder needs the datasets library: {HF_EXTRA}"
        ) from None
    if (path / "dataset_dict.json").is_file():
        splits = sorted(p.name for p in path.iterdir() if p.is_dir())
        if len(splits) != 1:
            raise RecordsError(
                f"{path}: a DatasetDict with splits {', '.join(splits)}; give one split's folder "
                f"(e.g. {path / splits[0]})"
            )
        path = path / splits[0]
    if not (path / "state.json").is_file():
        raise RecordsError(
            f"{path}: a folder that is not a datasets folder saved with save_to_disk "
            "(no state.json)"
        )
    loaded: Any = datasets.load_from_disk(str(path))
    return list(loaded.to_list())


SUFFIXES = {
    ".jsonl": read_jsonl,
    ".ndjson": read_jsonl,
    ".json": _json_rows,
    ".csv": _csv_rows,
    ".parquet": _parquet_rows,
}


def read_rows(path: Path) -> list[Any]:
    """The rows of a JSONL, JSON, CSV or Parquet file, or of a `datasets` folder."""
    if path.is_dir():
        return _datasets_rows(path)
    if not path.is_file():
        raise RecordsError(f"source file not found: {path}")
    reader = SUFFIXES.get(path.suffix.lower())
    if reader is None:
        raise RecordsError(
            f"{path}: unknown file type {path.suffix!r}; layout fields reads "
            f"{', '.join(SUFFIXES)} files and Hugging Face datasets folders"
        )
    return list(reader(path))
