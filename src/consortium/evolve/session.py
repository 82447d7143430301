"""The self-improvement entry point: an `EvolveRequest` in, `run_evolve`, the state and the report.

`consortium evolve` parses its options into an `EvolveRequest` and calls `run_evolve`; a Python user
calls the same function. Progress comes through `on_round`; nothing here prints.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from consortium.coord.registry import build_coordinator
from consortium.coord.strategy import Plan, Strategy
from consortium.core.errors import ConfigError
from consortium.evolve.loop import EvolveConfig, EvolveInputs, EvolveLoop, split_tasks
from consortium.evolve.proposals import PROPOSERS, ProposerSettings
from consortium.evolve.report import write_report
from consortium.evolve.state import EvolveState, RoundSummary
from consortium.pool import Pool
from consortium.pool.config import load_pool
from consortium.runtime.dist import make_executor
from consortium.runtime.store import DEFAULT_TRACES, TraceStore
from consortium.runtime.telemetry import Telemetry
from consortium.tasks.base import Task, TaskSet
from consortium.tasks.registry import load_task_set
from consortium.train.trinity.settings import RETRAIN


@dataclass(frozen=True)
class EvolveRequest:
    pool: Path
    """Pool file (TOML)."""
    tasks: str
    """Task spec of the tuning tasks (halved by task id into tuning and held-out without
    `heldout`)."""
    out: Path
    """Folder for state.json, report.md and the PNGs."""
    heldout: str | None = None
    final: str | None = None
    """Tasks no decision may see, for the final comparison; default: the held-out pool."""
    start: str | None = None
    """The first strategy's policy spec; default: the best single model on the first batch."""
    proposers: tuple[str, ...] = tuple(PROPOSERS)
    tolerance: float = 0.01
    """Accuracy (fraction) a cheaper proposal may give up on tuning tasks."""
    retrain_generations: int = 3
    answer_samples: int = 3
    """Samples per model the answer-aware proposer asks on the tuning tasks."""
    loop: EvolveConfig = field(default_factory=EvolveConfig)
    resume: bool = False
    executor: str = "local"
    ray_address: str | None = None
    traces: str = DEFAULT_TRACES


@dataclass(frozen=True)
class _TaskPools:
    tuning: list[Task]
    heldout: list[Task]
    final: list[Task] | None
    description: str


def _task_pools(request: EvolveRequest) -> tuple[_TaskPools, TaskSet]:
    """The tuning, held-out and final tasks, and the task set they come from (its grader)."""
    tuning_set = load_task_set(request.tasks)
    if request.heldout is None:
        tuning, heldout = split_tasks(tuning_set.tasks, request.loop.seed)
        description = f"{tuning_set.description}; tuning and held-out halves of {request.tasks}"
    else:
        tuning, heldout = tuning_set.tasks, load_task_set(request.heldout).tasks
        description = (
            f"{tuning_set.description}; tuning {request.tasks}; held-out {request.heldout}"
        )
    final = load_task_set(request.final).tasks if request.final else None
    if request.final:
        description += f"; final comparison {request.final}"
    return _TaskPools(list(tuning), list(heldout), final, description), tuning_set


def run_evolve(
    request: EvolveRequest,
    on_round: Callable[[RoundSummary], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> tuple[EvolveState, Path]:
    """Run (or, with `resume`, continue) the loop; returns its final state and the report's path
    (OUT/report.md, with rounds.png and pareto.png beside it). `on_note` is told a line after
    each strategy measured."""
    unknown = [name for name in request.proposers if name not in PROPOSERS]
    if unknown or not request.proposers:
        raise ConfigError(f"--proposers: expected some of {', '.join(PROPOSERS)}")
    config = load_pool(request.pool)
    pools, tuning_set = _task_pools(request)
    seed = request.loop.seed
    first = Strategy(default=Plan(first=request.start)) if request.start else None
    if first is not None:
        build_coordinator(first.default.first, config, seed)  # a bad start fails before any call
    proposer_settings = ProposerSettings(
        tolerance=request.tolerance,
        retrain=replace(RETRAIN, generations=request.retrain_generations, seed=seed),
        answer_samples=request.answer_samples,
    )

    async def go() -> EvolveState:
        async with Pool(config) as members:
            inputs = EvolveInputs(
                pool=members,
                pool_name=f"{request.pool} ({tuning_set.description})",
                tuning_pool=pools.tuning,
                heldout_pool=pools.heldout,
                final_pool=pools.final,
                telemetry=Telemetry.from_env(),
                executor=make_executor(request.executor, request.ray_address),
                grader=tuning_set.grader,
                resolve=lambda spec: build_coordinator(spec, config, seed),
                models=config.names,
                store=TraceStore(request.traces),
                proposers=[PROPOSERS[name](proposer_settings) for name in request.proposers],
                tasks_description=pools.description,
                note=on_note,
            )
            loop = EvolveLoop(
                inputs,
                request.loop,
                request.out,
                start=first,
                resume=request.resume,
                on_round=on_round,
            )
            return await loop.run()

    state = asyncio.run(go())
    return state, write_report(state, request.out)
