"""The evaluation entry point: `EvalConfig` in, `run_evaluation`, an `EvalResult` out.

One call for "evaluate these policies on these tasks": baselines added on request, a resumed run
checked against its stored settings, the executor chosen, budgets applied, progress reported
through a callback. `consortium eval` parses its options into an `EvalConfig` and prints the
result; a Python user calls the same function.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from consortium.coord.base import Coordinator
from consortium.coord.registry import SpecBuilder, build_coordinator, substitutes_per_policy
from consortium.core.errors import ConfigError
from consortium.core.plugins import ROUTERDC_PROTOCOL, load
from consortium.evaluation.results import EvalReport, TaskResult, stored_results, summaries_of
from consortium.evaluation.runner import evaluate_on
from consortium.evaluation.tables import to_json, to_markdown
from consortium.pool import Pool
from consortium.pool.config import PoolConfig, load_pool
from consortium.runtime.budget import Budget, Limits
from consortium.runtime.caller import Caller
from consortium.runtime.dist import make_executor
from consortium.runtime.store import DEFAULT_TRACES, TraceStore
from consortium.runtime.telemetry import Telemetry
from consortium.tasks.base import TaskSet
from consortium.tasks.registry import load_task_set

Protocol = Literal["sampled", "routerdc"]


Policy = str | Coordinator
"""A `--policy` spec, or a coordinator built in this process (it runs with a local executor)."""


@dataclass(frozen=True)
class EvalConfig:
    pool: Path | PoolConfig
    """Pool file (TOML), or a pool configuration built in code."""
    tasks: str | TaskSet
    """A `--tasks` spec, e.g. `replay:data=DIR:datasets=gsm8k:split=test:limit=100`, or a task
    set built in code."""
    policies: tuple[Policy, ...] = ()
    """`--policy` specs or coordinators; none: every single model and random."""
    baselines: bool | None = None
    """Add every single model, random and the oracle; None: on for a trained policy folder, or
    when no policy is given."""
    concurrency: int = 32
    seed: int = 0
    protocol: Protocol = "sampled"
    max_cost: float | None = None
    """USD cap on the whole run (this process's spending)."""
    task_max_calls: int | None = None
    task_max_tokens: int | None = None
    task_deadline: float | None = None
    resume: str | None = None
    """Id of an interrupted eval run to continue (its settings must match)."""
    executor: str = "local"
    ray_address: str | None = None
    traces: str = DEFAULT_TRACES
    kind: str = "eval"
    """The run's kind in the trace store (what `--resume` looks for)."""
    substitutes: dict[str, str] = field(default_factory=dict)
    """`--substitute OLD=NEW`: a pool model in place of an answer-aware policy folder's model."""

    def chosen_policies(self, pool: PoolConfig) -> list[Policy]:
        chosen = list(self.policies)
        baselines = self.baselines
        if baselines is None:
            baselines = not chosen or any(isinstance(p, str) and Path(p).is_dir() for p in chosen)
        if baselines:
            names = {_name(p) for p in chosen}
            chosen += [f"single:{m}" for m in pool.names if f"single:{m}" not in names]
            chosen += ["random"] if "random" not in names else []
        return chosen

    def pool_label(self, task_set: TaskSet) -> str:
        """How reports name the pool: its file and what the tasks say of it."""
        if isinstance(self.pool, PoolConfig):
            return task_set.description
        return f"{self.pool} ({task_set.description})"


def _name(policy: Policy) -> str:
    return policy if isinstance(policy, str) else policy.name


@dataclass
class EvalResult:
    report: EvalReport
    per_policy: dict[str, list[TaskResult]]
    """Each policy's results, in task order."""
    task_set: TaskSet
    pool: PoolConfig
    protocol: Protocol
    routerdc: list[Any] = field(default_factory=list)
    """RouterDC-protocol rows (`replay.protocol.ProtocolRow`) when `protocol` is routerdc."""

    @property
    def run_id(self) -> str:
        return self.report.run_id or ""

    def markdown(self) -> str:
        if self.protocol == "routerdc":
            protocol_markdown = load(f"{ROUTERDC_PROTOCOL}:protocol_markdown")
            text: str = protocol_markdown(self.routerdc, self.report.datasets, self.report.pool)
            return text
        return to_markdown(self.report)

    def to_json(self) -> dict[str, Any]:
        if self.protocol == "routerdc":
            protocol_json = load(f"{ROUTERDC_PROTOCOL}:protocol_json")
            written: dict[str, Any] = {"protocol": "routerdc", "pool": self.report.pool}
            return written | {
                "tasks": self.report.tasks,
                "run_id": self.run_id,
                **protocol_json(self.routerdc),
            }
        return to_json(self.report)


Progress = Callable[[str, int | None], Callable[[TaskResult | None], None]]
"""`progress(description, total)` is called once, before the work, and returns the function
called after each finished task (with None when the work reports no per-task progress)."""


def run_evaluation(config: EvalConfig, progress: Progress | None = None) -> EvalResult:
    """Run `config`'s policies over its tasks, grade, summarise; every call and result goes to
    the trace store as it finishes. A failure marks the run `failed` (its finished results stay;
    `resume` continues it)."""
    pool = config.pool if isinstance(config.pool, PoolConfig) else load_pool(config.pool)
    task_set = config.tasks if isinstance(config.tasks, TaskSet) else load_task_set(config.tasks)
    if config.protocol == "routerdc":
        require_recorded = load(f"{ROUTERDC_PROTOCOL}:require_recorded")
        require_recorded(task_set.tasks)
    chosen = config.chosen_policies(pool)
    substitutes = substitutes_per_policy(
        [p if isinstance(p, str) else None for p in chosen], config.substitutes
    )
    coordinators = [
        build_coordinator(p, pool, config.seed, s) if isinstance(p, str) else p
        for p, s in zip(chosen, substitutes, strict=True)
    ]
    if config.executor != "local" and not all(isinstance(p, str) for p in chosen):
        raise ConfigError("coordinators built in code run in this process: --executor local")
    executor = make_executor(config.executor, config.ray_address)
    if not executor.shares_process and config.max_cost is not None:
        raise ConfigError("--max-cost caps one process's spending; it needs --executor local")
    store = TraceStore(config.traces)
    tasks_label = config.tasks if isinstance(config.tasks, str) else task_set.description
    settings: dict[str, Any] = {"tasks": tasks_label, "policies": [_name(p) for p in chosen]}
    if config.substitutes:
        settings["substitutes"] = config.substitutes
    finished = _resumed(store, config, task_set, settings) if config.resume else {}
    limits = Limits(max_calls=config.task_max_calls, max_tokens=config.task_max_tokens)
    report_progress = progress or (lambda _description, _total: lambda _result: None)

    async def measure(run_id: str) -> dict[str, list[TaskResult]]:
        if executor.shares_process:
            remaining = len(task_set.tasks) * len(coordinators)
            remaining -= sum(len(done) for done in finished.values())
            advance = report_progress(f"{len(coordinators)} policies", remaining)
        else:  # the jobs report nothing until they return
            advance = report_progress(f"{len(chosen)} policies on {executor.name}", None)
        async with Pool(pool) as members:
            budget = Budget(Limits(max_cost=config.max_cost))
            caller = Caller(members, store, run_id, budget=budget, telemetry=Telemetry.from_env())
            per_policy = await evaluate_on(
                executor,
                [
                    (coordinator, SpecBuilder(_name(policy), config.seed, tuple(s.items())))
                    for coordinator, policy, s in zip(
                        coordinators, chosen, substitutes, strict=True
                    )
                ],
                task_set.tasks,
                task_set.grader,
                caller,
                concurrency=config.concurrency,
                task_limits=limits,
                deadline=config.task_deadline,
                on_done=advance,
                finished=finished,
                resumable=True,
            )
        return {c.name: results for c, results in zip(coordinators, per_policy, strict=True)}

    label = str(config.pool) if isinstance(config.pool, Path) else task_set.description
    with store.running(config.kind, pool=label, config=settings, resume=config.resume) as run:
        per_policy = asyncio.run(measure(run.run_id))  # a failure leaves the run resumable
        return _result(config, pool, task_set, per_policy, run.run_id, tasks_label)


def _resumed(
    store: TraceStore, config: EvalConfig, task_set: TaskSet, settings: dict[str, Any]
) -> dict[str, list[TaskResult]]:
    """The results an interrupted run of the same evaluation already stored."""
    assert config.resume is not None
    earlier = store.run(config.resume)
    if earlier is None or earlier["kind"] != config.kind:
        raise ConfigError(
            f"--resume {config.resume}: no {config.kind} run with that id in {config.traces}"
        )
    if json.loads(earlier["config"] or "{}") != settings:
        raise ConfigError(
            f"--resume {config.resume}: that run evaluated other tasks or policies "
            f"({earlier['config']})"
        )
    return stored_results(store, config.resume, task_set.tasks)


def _result(
    config: EvalConfig,
    pool: PoolConfig,
    task_set: TaskSet,
    per_policy: dict[str, list[TaskResult]],
    run_id: str,
    tasks_label: str,
) -> EvalResult:
    # The routerdc table carries its own oracle, from the recorded outcomes.
    summaries = summaries_of(per_policy, with_oracle=config.protocol == "sampled")
    datasets = list(dict.fromkeys(t.dataset for t in task_set.tasks))
    groups = {
        name: [d for d in datasets if d in members] for name, members in task_set.groups.items()
    }
    groups = {name: group for name, group in groups.items() if group}
    groups["all"] = datasets
    report = EvalReport(
        pool=config.pool_label(task_set),
        tasks=tasks_label,
        datasets=datasets,
        summaries=summaries,
        groups=groups,
        run_id=run_id,
    )
    rows: list[Any] = []
    if config.protocol == "routerdc":
        routerdc_rows = load(f"{ROUTERDC_PROTOCOL}:routerdc_rows")
        rows = routerdc_rows(per_policy, task_set.tasks, {m.name: m.model for m in pool.models})
    return EvalResult(report, per_policy, task_set, pool, config.protocol, rows)
