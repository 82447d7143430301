"""The policy versions a learning server adopted: `DIR/policies/vN`, each a normal policy folder
with the evidence it was adopted on (`evidence.json`). The start policy is v0 unless it is one of
DIR's versions (a rollback: `serve --policy DIR/policies/vK`); a copy of it is kept as
`DIR/policies/start` (what `feedback export` states before any adoption, and
`serve --policy DIR/policies/start` rolls back to v0)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from consortium.coord.answers.folder import AnswerPolicy, write_policy

EVIDENCE = "evidence.json"
START = "start"
_VERSION = re.compile(r"^v(\d+)$")


def policies_dir(folder: Path) -> Path:
    return folder / "policies"


def start_folder(folder: Path) -> Path:
    """Where DIR keeps the policy its server last started from as v0."""
    return policies_dir(folder) / START


def write_start(folder: Path, policy: AnswerPolicy) -> None:
    """Keep `policy` as DIR's start: written whole, then renamed over the last one unless that
    holds the same policy (replicas starting together each write theirs; the last rename wins)."""
    root, start = policies_dir(folder), start_folder(folder)
    partial, old = (root / f".{START}.{os.getpid()}.{end}" for end in ("partial", "old"))
    write_policy(partial, policy)
    kept = start / "policy.json"
    if kept.is_file() and kept.read_bytes() == (partial / "policy.json").read_bytes():
        shutil.rmtree(partial)
        return
    with contextlib.suppress(FileNotFoundError):  # none yet, or another replica moved it
        os.replace(start, old)
    try:
        os.replace(partial, start)
    except OSError:  # another replica renamed its start there first: it stays
        shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def adopted(folder: Path) -> list[int]:
    """The version numbers written in DIR, ascending (only folders with their evidence: a
    version is written whole before it is named)."""
    root = policies_dir(folder)
    if not root.is_dir():
        return []
    found = [_VERSION.match(p.name) for p in root.iterdir() if (p / EVIDENCE).exists()]
    return sorted(int(m.group(1)) for m in found if m)


def version_of(policy: str, folder: Path) -> str | None:
    """The version name (vK) when `policy` is one of DIR's version folders (v0: its start),
    else None."""
    path = Path(policy).resolve()
    if path.parent != policies_dir(folder).resolve():
        return None
    if path.name == START:
        return "v0"
    return path.name if _VERSION.match(path.name) else None


def number(version: str) -> int:
    """N of the version name vN (v0: the start policy)."""
    found = _VERSION.match(version)
    if found is None:
        raise ValueError(f"not a version name: {version!r}")
    return int(found.group(1))


def latest(folder: Path) -> Path | None:
    numbers = adopted(folder)
    return policies_dir(folder) / f"v{numbers[-1]}" if numbers else None


def write_version(folder: Path, policy: AnswerPolicy, evidence: dict[str, Any]) -> str:
    """Write the next version folder (policy, evidence, then renamed into place); its name."""
    numbers = adopted(folder)
    name = f"v{(numbers[-1] if numbers else 0) + 1}"
    root = policies_dir(folder)
    partial = root / f".{name}.partial"
    write_policy(partial, policy)
    (partial / EVIDENCE).write_text(json.dumps(evidence, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, root / name)
    return name
