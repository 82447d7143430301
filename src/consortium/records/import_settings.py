"""`records import-file`'s settings: the command line's and a TOML recipe file's, merged (the
command line wins), checked and imported into one data set."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consortium.records.errors import RecordsError
from consortium.records.importers.field_paths import parse_map_items
from consortium.records.rows import OutputRow
from consortium.records.schema import AnswerKind, Manifest, answer_kind_named


@dataclass
class ImportSettings:
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

    def over(self, config: ImportSettings) -> ImportSettings:
        """These settings (the command line's) over `config` (the TOML file's): scalars given
        here win, files given here replace the file's, map entries override entry by entry."""
        merged = {
            name: getattr(self, name) if getattr(self, name) is not None else getattr(config, name)
            for name in ImportSettings.__dataclass_fields__
            if name not in ("files", "field_map")
        }
        return ImportSettings(
            **merged,
            files=self.files or config.files,
            field_map={**config.field_map, **self.field_map},
        )


@dataclass(frozen=True)
class Imported:
    out: Path
    """The records folder to write."""
    manifest: Manifest
    rows: list[OutputRow]


def import_with(settings: ImportSettings) -> Imported:
    """The data set the settings describe; a missing setting or no source file is one line."""
    from consortium.records.layouts import import_files

    layout, dataset, kind, out = _required(settings)
    manifest, rows = import_files(
        layout,
        dataset=dataset,
        kind=kind,
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
    return Imported(out, manifest, rows)


def _required(settings: ImportSettings) -> tuple[str, str, AnswerKind, Path]:
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


def file_options(items: list[str]) -> list[tuple[Path, str | None]]:
    """`--file PATH=MODEL` options; the path must exist."""
    pairs: list[tuple[Path, str | None]] = []
    for item in items:
        path, sep, model = item.rpartition("=")
        if not sep or not path or not model.strip():
            raise RecordsError(f"--file {item!r}: expected PATH=MODEL, e.g. --file a.jsonl=gpt-4o")
        pairs.append((_existing(Path(path), f"--file {item}"), model.strip()))
    return pairs


def _existing(path: Path, given: str) -> Path:
    if not path.exists():
        raise RecordsError(f"{given}: no such file or folder: {path}")
    return path


CONFIG_KEYS = (
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
"""The keys of an import's TOML file."""


def read_import_config(path: Path) -> ImportSettings:
    """A TOML recipe; relative paths in it are relative to its folder."""
    try:
        data = tomllib.loads(_existing(path, "--config").read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise RecordsError(f"{path}: not valid TOML ({error})") from None
    unknown = [key for key in data if key not in CONFIG_KEYS]
    if unknown:
        raise RecordsError(f"{path}: unknown key {unknown[0]!r}; known: {', '.join(CONFIG_KEYS)}")
    texts = {key: _config_text(path, data, key) for key in CONFIG_KEYS[:-2]}
    here = path.parent
    return ImportSettings(
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
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RecordsError(f"{path}: {key} must be a string, got {value!r}")
    return value


def _config_files(path: Path, files: Any) -> list[tuple[Path, str | None]]:
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
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise RecordsError(f'{path}: map must be a [map] table of field = "path" entries')
    return parse_map_items([f"{key}={value}" for key, value in table.items()])
