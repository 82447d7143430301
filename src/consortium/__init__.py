"""Consortium: a coordinated team of language models used like one model.

The public surface, importable from the package root (loaded on first use, so `import consortium`
stays light):

- pools: `load_pool`, `Pool`, and the protocol a backend implements, `Agent`;
- calls: `Caller` (budget, cache, trace for every call), `TraceStore`;
- policies: `Coordinator` (the protocol), `Outcome`, `build_coordinator` (a `--policy` spec);
- tasks: `Task`, `Grade`, `Grader`, `load_task_set` (a `--tasks` spec);
- the jobs as calls: `run_evaluation(EvalConfig)`, `run_evolve(EvolveRequest)`,
  `run_trinity_training(TrinityRequest)`, `fit_answer_policy` (an answer-aware team fitted on a
  records folder: its `.policy` and train standing) with `write_policy`; one level down,
  `evaluate_policies`;
- errors: `ConsortiumError` and its tree (`consortium.core.errors`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from consortium.core.errors import (
    AgentError,
    BudgetExceeded,
    ConfigError,
    ConsortiumError,
    CoordinatorError,
    TaskSpecError,
    UnknownModelError,
)
from consortium.core.types import Completion, Message, Usage

if TYPE_CHECKING:
    from consortium.coord.answers.folder import write_policy
    from consortium.coord.base import Coordinator, Outcome
    from consortium.coord.registry import build_coordinator
    from consortium.evaluation.entry import EvalConfig, run_evaluation
    from consortium.evaluation.runner import evaluate_policies
    from consortium.evolve.session import EvolveRequest, run_evolve
    from consortium.pool import Pool
    from consortium.pool.base import Agent
    from consortium.pool.config import load_pool
    from consortium.runtime.caller import Caller
    from consortium.runtime.store import TraceStore
    from consortium.tasks.base import Grade, Grader, Task
    from consortium.tasks.registry import load_task_set
    from consortium.train.answers.policy import fit_answer_policy
    from consortium.train.trinity.session import TrinityRequest, run_trinity_training

__version__ = "0.1.0"

_LAZY = {
    "load_pool": "consortium.pool.config",
    "Pool": "consortium.pool",
    "Agent": "consortium.pool.base",
    "Caller": "consortium.runtime.caller",
    "TraceStore": "consortium.runtime.store",
    "Coordinator": "consortium.coord.base",
    "Outcome": "consortium.coord.base",
    "build_coordinator": "consortium.coord.registry",
    "Task": "consortium.tasks.base",
    "Grade": "consortium.tasks.base",
    "Grader": "consortium.tasks.base",
    "load_task_set": "consortium.tasks.registry",
    "evaluate_policies": "consortium.evaluation.runner",
    "EvalConfig": "consortium.evaluation.entry",
    "run_evaluation": "consortium.evaluation.entry",
    "EvolveRequest": "consortium.evolve.session",
    "run_evolve": "consortium.evolve.session",
    "TrinityRequest": "consortium.train.trinity.session",
    "run_trinity_training": "consortium.train.trinity.session",
    "fit_answer_policy": "consortium.train.answers.policy",
    "write_policy": "consortium.coord.answers.folder",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'consortium' has no attribute {name!r}")


__all__ = [
    "Agent",
    "AgentError",
    "BudgetExceeded",
    "Caller",
    "Completion",
    "ConfigError",
    "ConsortiumError",
    "Coordinator",
    "CoordinatorError",
    "EvalConfig",
    "EvolveRequest",
    "Grade",
    "Grader",
    "Message",
    "Outcome",
    "Pool",
    "Task",
    "TaskSpecError",
    "TraceStore",
    "TrinityRequest",
    "UnknownModelError",
    "Usage",
    "__version__",
    "build_coordinator",
    "evaluate_policies",
    "fit_answer_policy",
    "load_pool",
    "load_task_set",
    "run_evaluation",
    "run_evolve",
    "run_trinity_training",
    "write_policy",
]
