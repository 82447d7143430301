"""The package root's public surface and the one exception tree."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

import consortium
from consortium.coord.conductor.workflow import WorkflowError, parse_workflow
from consortium.core.errors import (
    AgentError,
    BudgetExceeded,
    ConfigError,
    ConsortiumError,
    CoordinatorError,
    TaskSpecError,
    UnknownModelError,
)
from consortium.pool.config import PoolConfig, dump_pool, parse_pool
from consortium.runtime.store import TraceStore


def test_every_public_name_resolves_and_the_root_import_stays_light() -> None:
    for name in consortium.__all__:
        assert getattr(consortium, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = consortium.nope  # type: ignore[attr-defined]
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, consortium; print(sorted(set(sys.modules) & "
            "{'sqlalchemy', 'openai', 'torch', 'numpy'}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def test_one_exception_tree() -> None:
    for error in (ConfigError, CoordinatorError, AgentError, BudgetExceeded):
        assert issubclass(error, ConsortiumError)
    assert issubclass(UnknownModelError, ConfigError) and issubclass(TaskSpecError, ConfigError)
    assert issubclass(WorkflowError, CoordinatorError)
    with pytest.raises(WorkflowError):
        parse_workflow("model_id = [0]\nsubtasks = ['a', 'b']\naccess_list = [[]]", ["a"])


def test_a_policy_the_pool_cannot_satisfy_is_a_coordinator_error() -> None:
    pool = parse_pool({"models": [{"name": "a", "base_url": "http://h/v1", "model": "a"}]})
    with pytest.raises(CoordinatorError, match="policy 'conductor:a:workers=a'"):
        consortium.build_coordinator("conductor:a:workers=a", pool)
    with pytest.raises(UnknownModelError):
        consortium.build_coordinator("single:b", pool)


def test_run_evaluation_is_the_library_call_eval_makes(
    split2_workers: PoolConfig, replay_dir: Path, tmp_path: Path
) -> None:
    from consortium.evaluation.entry import EvalConfig, run_evaluation

    pool = tmp_path / "pool.toml"
    pool.write_text(dump_pool(split2_workers))
    config = EvalConfig(
        pool=pool,
        tasks=f"replay:data={replay_dir}:datasets=gsm8k,mbpp:split=test:limit=6",
        policies=("single:MetaMath-Mistral-7B",),
        baselines=True,
        traces=f"sqlite:///{tmp_path / 't.db'}",
    )
    started: list[tuple[str, int | None]] = []
    finished: list[object] = []

    def progress(description: str, total: int | None) -> Callable[[object], None]:
        started.append((description, total))
        return finished.append

    result = run_evaluation(config, progress)
    policies = [s.policy for s in result.report.summaries]
    assert policies[0] == "single:MetaMath-Mistral-7B" and "random" in policies
    assert policies[-1] == "oracle (per-question best)"
    assert started == [("8 policies", 8 * 12)] and len(finished) == 8 * 12
    assert result.report.groups == {"ID": ["gsm8k"], "OOD": ["mbpp"], "all": ["gsm8k", "mbpp"]}
    assert TraceStore(config.traces).run(result.run_id)["status"] == "finished"  # type: ignore[index]
    assert "single:MetaMath-Mistral-7B" in result.markdown()

    # a resumed run must ask for the same evaluation
    other = EvalConfig(pool=pool, tasks=config.tasks, resume=result.run_id, traces=config.traces)
    with pytest.raises(ConfigError, match="evaluated other tasks or policies"):
        run_evaluation(other)


def test_run_evaluation_takes_objects_built_in_code(
    split2_workers: PoolConfig, replay_dir: Path, tmp_path: Path
) -> None:
    """A pool configuration, a task set and coordinators built in code (not files and specs):
    evaluated in this process, named by the task set; a remote executor is refused."""
    from consortium.coord.baselines import SingleModel
    from consortium.evaluation.entry import EvalConfig, run_evaluation
    from consortium.tasks.registry import load_task_set

    task_set = load_task_set(f"replay:data={replay_dir}:datasets=gsm8k:split=test:limit=4")

    class Shouting(SingleModel):
        """A policy no spec names: one model's answer, in capitals."""

        async def run(self, task, caller):  # type: ignore[no-untyped-def]
            outcome = await super().run(task, caller)
            return replace(outcome, answer=outcome.answer.upper())

    shouting = Shouting("MetaMath-Mistral-7B")
    shouting.name = "shouting"
    config = EvalConfig(
        split2_workers,
        task_set,
        (shouting, "single:Mistral-7B-v0.1"),
        baselines=False,
        traces=f"sqlite:///{tmp_path / 't.db'}",
        kind="mine",
    )
    result = run_evaluation(config)
    assert [s.policy for s in result.report.summaries][:2] == ["shouting", "single:Mistral-7B-v0.1"]
    assert all(r.answer == (r.answer or "").upper() for r in result.per_policy["shouting"])
    assert result.report.pool == task_set.description
    assert TraceStore(config.traces).run(result.run_id)["kind"] == "mine"  # type: ignore[index]
    with pytest.raises(ConfigError, match="--executor local"):
        run_evaluation(replace(config, executor="ray"))
