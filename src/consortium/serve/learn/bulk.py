"""Labels that arrive in bulk (`consortium feedback import FILE`): a JSONL file of
{"id", "reference"} (or {"id", "correct"}) written to DIR's traffic store, each line checked as
`POST /v1/feedback` checks one; a line that cannot be taken is one line of the result and
changes nothing. A running server on DIR counts them between requests (`Learner.follow`) and
refits when they make `--refit-every`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from consortium.core.errors import ConfigError
from consortium.serve.learn.labels import check_reference, label_of
from consortium.serve.learn.learner import answer_kind_of
from consortium.serve.learn.store import FeedbackError, TrafficStore, store_url, unknown_id


@dataclass
class Imported:
    taken: int = 0
    refused: list[str] = field(default_factory=list)
    """One line per line of the file that was not taken: its number and why."""


def import_labels(folder: Path, traces: str, path: Path) -> Imported:
    kind = answer_kind_of(folder)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror})") from None
    store = TrafficStore(store_url(folder, traces))
    result = Imported()
    try:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                label = label_of(json.loads(line))
                request = store.request(label.response_id)
                if request is None:
                    raise unknown_id(label.response_id)
                if label.reference is not None:
                    check_reference(kind, label.reference, request["question"])
                store.add_label(label)
            except FeedbackError as error:
                result.refused.append(f"{path}:{number}: {error}")
                continue
            except ValueError:
                result.refused.append(f"{path}:{number}: not a JSON object")
                continue
            result.taken += 1
    finally:
        store.close()
    return result
