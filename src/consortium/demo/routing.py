"""Routing on the scores-only replay of RouterDC's data: the question-only TRINITY router, the
baselines written as workflows, every single model, a random router and the per-question-best
oracle on the recorded test splits, as one table per recorded source (`make routing-demo`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from consortium.coord.base import Coordinator
from consortium.coord.baselines import RandomRouter, SingleModel
from consortium.coord.conductor.templates import WorkflowCoordinator, template
from consortium.coord.trinity.policy import default_encoder, load_policy
from consortium.core.progress import task_progress
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.evaluation.results import ORACLE, EvalReport, TaskResult
from consortium.evaluation.tables import to_markdown, to_rich
from consortium.records.names import short_name
from consortium.replay.data import ReplayData, Source, load_replay
from consortium.replay.expectation import recorded_expectation
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.tasks import ID_DATASETS, OOD_DATASETS, ReplayGrader, load_replay_tasks
from consortium.tasks.base import TaskSet
from consortium.tasks.registry import load_task_set
from consortium.train.trinity.session import fit_setup, train_trinity
from consortium.train.trinity.settings import TrainConfig

SECTIONS: dict[Source, tuple[list[str], dict[str, list[str]]]] = {
    "split2": (
        [*ID_DATASETS, *OOD_DATASETS],
        {
            "ID": list(ID_DATASETS),
            "OOD": list(OOD_DATASETS),
            "all": [*ID_DATASETS, *OOD_DATASETS],
        },
    ),
    "routerbench": (
        ["rb_arc_challenge", "rb_mbpp", "rb_winogrande"],
        {"all": ["rb_arc_challenge", "rb_mbpp", "rb_winogrande"]},
    ),
}


def demo_section(
    data: ReplayData,
    source: Source,
    base_url: str,
    traces: str,
    *,
    limit: int | None,
    seed: int,
    concurrency: int,
    progress: Progress,
    extra: Sequence[Coordinator] = (),
) -> EvalReport:
    datasets, groups = SECTIONS[source]
    loaded = load_replay_tasks(
        data, source=source, datasets=datasets, split="test", limit=limit, seed=seed
    )
    groups_of = {name: tuple(members) for name, members in groups.items()}
    task_set = TaskSet(loaded.tasks, ReplayGrader(), loaded.description, groups_of)
    models = data.models[source]
    policies: list[Coordinator] = [*extra]
    policies += [SingleModel(short_name(m)) for m in models]
    policies.append(RandomRouter([short_name(m) for m in models], seed=seed))
    bars = {
        policy.name: progress.add_task(
            f"{source} · {short_label(policy.name)}", total=len(task_set.tasks), start=False
        )
        for policy in policies
    }

    def advance(result: TaskResult | None) -> None:
        if result is None:
            return
        bar = bars[result.policy]
        task = next(t for t in progress.tasks if t.id == bar)
        if not task.started:  # policies run one after another: its clock starts with its first
            progress.start_task(bar)
        progress.advance(bar)
        if task.finished:
            progress.console.print(
                f"{task.description}: {task.completed:.0f} tasks in {task.elapsed or 0:.1f} s"
            )

    result = run_evaluation(
        EvalConfig(
            replay_pool(data, base_url, models, max_concurrency=concurrency),
            task_set,
            tuple(policies),
            baselines=False,
            concurrency=concurrency,
            seed=seed,
            traces=traces,
            kind="demo",
        ),
        progress=lambda _description, _total: advance,
    )
    recorded = {
        (ORACLE if model == ORACLE else f"single:{short_name(model)}"): values
        for model, values in recorded_expectation(task_set.tasks).items()
    }
    limit_text = f"a seeded sample of {limit} per dataset" if limit else "all questions"
    return replace(
        result.report,
        tasks=f"{source} test splits of {', '.join(datasets)} ({limit_text}, seed {seed})",
        recorded=recorded,
    )


def short_label(policy: str, width: int = 40) -> str:
    """A policy name cut to fit a progress bar's label."""
    return policy if len(policy) <= width else policy[: width - 1] + "…"


DEMO_WORKFLOWS = ("judge-vote", "moa", "debate", "reflect")


def demo_workflows(data: ReplayData) -> list[WorkflowCoordinator]:
    """The baselines as workflows over the three open models with the best recorded mean on the
    in-distribution *train* splits (the first of them aggregates, judges or reflects)."""
    train = load_replay_tasks(data, source="split2", datasets=ID_DATASETS, split="train")
    recorded = recorded_expectation(train.tasks)
    ranked = sorted(
        data.models["split2"],
        key=lambda m: -sum(recorded[m].values()) / len(recorded[m]),
    )
    top = [short_name(m) for m in ranked[:3]]
    return [
        WorkflowCoordinator(template(kind, top), f"workflow:{kind}({', '.join(top)})")
        for kind in DEMO_WORKFLOWS
    ]


def trinity_policy(
    data: ReplayData, data_dir: Path, base_url: str, policy: Path, console: Console
) -> Coordinator:
    """The trained TRINITY policy in `policy`, or, when there is none yet, a small one trained
    there now on 200 training questions per in-distribution dataset (a few minutes on 2 cores)."""
    if not (policy / "policy.json").exists():
        console.print(f"no trained policy in {policy}: training a small one (30 generations)")
        task_set = load_task_set(
            f"replay:data={data_dir}:split=train:limit=200:datasets={','.join(ID_DATASETS)}"
        )
        config = replay_pool(data, base_url, data.models["split2"])
        setup = fit_setup(
            default_encoder(cache=policy / "features.db"),
            task_set,
            config.names,
            components=16,
            max_turns=1,
            roles=("worker",),
        )
        asyncio.run(
            train_trinity(
                config,
                task_set,
                setup,
                policy,
                TrainConfig(generations=30),
            )
        )
    return load_policy(policy)


def run_routing_demo(
    data_dir: Path,
    *,
    traces: str,
    out: Path | None,
    limit: int | None = 200,
    seed: int = 0,
    concurrency: int = 16,
    console: Console | None = None,
    policy: Path | None = None,
    workflows: bool = True,
) -> list[EvalReport]:
    console = console or Console()
    data = load_replay(data_dir)
    reports: list[EvalReport] = []
    with ReplayServerProcess(data_dir, "--seed", str(seed)) as server:
        console.print(f"replay server on {server.base_url}")
        if policy:
            console.print(f"loading the TRINITY policy in {policy} (its sentence encoder)")
        extra: list[Coordinator] = (
            [trinity_policy(data, data_dir, server.base_url, policy, console)] if policy else []
        )
        if workflows:
            extra += demo_workflows(data)
        with task_progress(console) as progress:
            for source in SECTIONS:
                if source not in data.models:
                    continue
                reports.append(
                    demo_section(
                        data,
                        source,
                        server.base_url,
                        traces,
                        limit=limit,
                        seed=seed,
                        concurrency=concurrency,
                        progress=progress,
                        extra=extra if source == "split2" else (),
                    )
                )
    for report in reports:
        console.print(to_rich(report, title=report.tasks))
        console.print(f"[dim]traces: consortium traces show {report.run_id}[/dim]")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        text = "# Routing on the scores-only replay\n\nMade by `make routing-demo` "
        text += "(`consortium routing-demo`).\n\n"
        # No run ids in the file: rerunning the demo rewrites it byte for byte.
        sections = [to_markdown(replace(r, run_id="")) for r in reports]
        text += "\n".join(
            f"## {r.tasks}\n\n{section}" for r, section in zip(reports, sections, strict=True)
        )
        out.write_text(text, encoding="utf-8")
        console.print(f"wrote {out}")
    return reports
