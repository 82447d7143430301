"""The plug-ins the package ships, named where their code lives and imported only on first use, so
generic code never imports them.

A task-set plug-in is a function that takes the parsed `--tasks` spec (`tasks.spec.TaskSpec`) and
returns a `tasks.base.TaskSet`; `tasks/registry.py` offers its kind beside the built-in ones.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

TASK_SETS: dict[str, str] = {
    "replay": "consortium.replay.tasks:replay_task_set",
    "records": "consortium.records.tasks:records_task_set",
}
"""`--tasks` kind → "module:function"."""

ROUTERDC_PROTOCOL = "consortium.replay.protocol"
"""The module of `eval --protocol routerdc` (RouterDC's published table: `require_recorded`,
`routerdc_rows`, `protocol_markdown`, `protocol_json`); the routerdc protocol reads replay tasks."""


def load(target: str) -> Any:
    """The object a "module:attribute" string names, importing its module."""
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)
