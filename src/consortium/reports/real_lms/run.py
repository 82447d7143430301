"""`make real`: llama.cpp's server with SmolLM2-135M-Instruct and Gemma 3 270M, then each single
model, vote, MoA, debate, reflect, TRINITY with all three roles (an untrained, randomly initialised
head) and the Conductor (SmolLM2 writing workflows, falling back to Gemma, its only worker, when a
workflow does not parse) on small seeded samples of arithmetic, GSM8K and HumanEval."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from consortium.coord.registry import build_coordinator
from consortium.coord.trinity.encoder import SentenceEncoder, StandardizedEncoder, Standardizer
from consortium.coord.trinity.head import ROLES
from consortium.coord.trinity.policy import HeadSetup, default_encoder, save_policy
from consortium.core.answers import find_verdict
from consortium.evaluation.entry import EvalConfig, run_evaluation
from consortium.evaluation.results import TaskResult
from consortium.reports.real_lms.markdown import real_lms_json, real_lms_markdown
from consortium.reports.real_lms.request import RealLmsRequest, Row
from consortium.runtime.store import TraceStore
from consortium.smallmodels.files import GEMMA3, SMOLLM2
from consortium.smallmodels.llamacpp import LlamaCppServers, ServerSettings
from consortium.tasks.base import TaskSet
from consortium.tasks.registry import load_task_set


@dataclass(frozen=True)
class RealLmsReport:
    """What `make real` writes: real-lms.md, .json and, from `rows`, .png."""

    markdown: str
    data: dict[str, Any]
    rows: list[Row]


def run_real_lms(request: RealLmsRequest) -> RealLmsReport:
    """Every policy on every task set over the live pool; traces in OUT/real-lms-traces.db."""
    out = Path(request.out)
    task_sets = _task_sets(request)
    models = [SMOLLM2.name, GEMMA3.name]
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "real-lms-traces.db"
    traces.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        trinity = untrained_trinity(work / "trinity", models, request.seed)
        policies = [
            f"single:{SMOLLM2.name}",
            f"single:{GEMMA3.name}",
            "workflow:judge-vote",
            "workflow:moa",
            "workflow:debate",
            "workflow:reflect",
            str(trinity),
            f"conductor:{SMOLLM2.name}:workers={GEMMA3.name}:fallback={GEMMA3.name}",
        ]
        settings = ServerSettings(max_tokens=request.max_tokens)
        with LlamaCppServers(work / "servers", settings=settings) as servers:
            rows, counts = evaluate(task_sets, policies, servers, traces)
    text = real_lms_markdown(rows, counts, request.script)
    print(text)
    return RealLmsReport(text, real_lms_json(rows, counts), rows)


def _task_sets(request: RealLmsRequest) -> dict[str, TaskSet]:
    benchmarks, seed = Path(request.benchmarks), request.seed
    return {
        "arithmetic": load_task_set(f"arithmetic:n={request.arithmetic}:seed={seed}"),
        "gsm8k": load_task_set(
            f"gsm8k:path={benchmarks / 'gsm8k/test.jsonl'}:limit={request.gsm8k}:seed={seed}"
        ),
        "humaneval": load_task_set(
            f"humaneval:path={benchmarks / 'humaneval/HumanEval.jsonl.gz'}"
            f":limit={request.humaneval}:seed={seed}"
        ),
    }


def untrained_trinity(directory: Path, models: list[str], seed: int) -> Path:
    """A TRINITY policy over the real pool with a random head (all three roles, up to 3 turns)."""
    encoder = StandardizedEncoder(
        default_encoder(SentenceEncoder.name, directory / "features.db"),
        Standardizer(np.zeros(SentenceEncoder.dim), np.ones(SentenceEncoder.dim)),
    )
    setup = HeadSetup(encoder, models, max_turns=3, roles=ROLES)
    vector = np.random.default_rng(seed).normal(0.0, 1.0, setup.n_params)
    save_policy(directory, vector, setup, {"training": f"none (random head, seed {seed})"})
    return directory


def evaluate(
    task_sets: dict[str, TaskSet], policies: list[str], pool: LlamaCppServers, traces: Path
) -> tuple[list[Row], dict[str, int]]:
    """Each policy on each task set: one `run_evaluation` each (timed), traced in `traces`."""
    config = pool.pool()
    rows: list[Row] = []
    run_ids: list[str] = []
    for label, task_set in task_sets.items():
        for spec in policies:
            coordinator = build_coordinator(spec, config)
            name = "trinity (untrained, 3 roles)" if Path(spec).is_dir() else spec
            coordinator.name = name
            started = time.perf_counter()
            evaluated = run_evaluation(
                EvalConfig(
                    config,
                    task_set,
                    (coordinator,),
                    baselines=False,
                    concurrency=2,
                    traces=f"sqlite:///{traces}",
                    kind="real-report",
                )
            )
            run_ids.append(evaluated.run_id)
            rows.append(
                _row(label, name, spec, evaluated.per_policy[name], time.perf_counter() - started)
            )
            print(f"{label:12} {name:34} {rows[-1].correct}/{rows[-1].n}", flush=True)
    return rows, _verifier_counts(traces, run_ids)


def _row(label: str, name: str, spec: str, results: list[TaskResult], seconds: float) -> Row:
    fallbacks = sum(
        r.outcome is not None
        and r.outcome.workflow is not None
        and any("fallback" in note for note in r.outcome.workflow.notes)
        for r in results
    )
    return Row(
        label,
        name,
        len(results),
        sum(r.grade.correct for r in results),
        sum(r.calls for r in results),
        sum(r.tokens for r in results),
        sum(r.error is not None for r in results),
        seconds,
        f"{fallbacks} workflows unparsed → fallback" if spec.startswith("conductor") else "",
    )


def _verifier_counts(traces: Path, run_ids: list[str]) -> dict[str, int]:
    """TRINITY's Verifier turns in these runs and the verdicts they stated."""
    store = TraceStore(f"sqlite:///{traces}")
    verdicts = [
        find_verdict(call["response"] or "")
        for run_id in run_ids
        for call in store.iter_calls(run_id)
        if call["role"] == "verifier" and call["error"] is None
    ]
    store.close()
    return {
        "verifier_calls": len(verdicts),
        "parsed": sum(v is not None for v in verdicts),
        "accept": verdicts.count("ACCEPT"),
        "revise": verdicts.count("REVISE"),
    }
