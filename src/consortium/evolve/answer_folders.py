"""Answer-aware policies evolve proposes, as policy folders (`coord.answers.folder`): the folder a
candidate strategy names (OUT/answers/…, written before it is measured, its figures replaced by
the live measurement once the guard has it), and the folder of an adopted one
(OUT/adopted/round-N/CLUSTER), which `consortium serve --policy FOLDER` takes."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from consortium.coord.answers.folder import FOLDER_SCHEMA, AnswerPolicy, Figures, write_policy
from consortium.coord.answers.rules import Rule
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.results import TaskResult
from consortium.pool.config import PoolConfig
from consortium.records.schema import AnswerKind, Price

PENDING = Figures(questions=0, accuracy=0.0, usd_per_question=0.0, calls_per_question=0.0)
"""Held-out figures of a candidate not measured yet."""
PENDING_SOURCES = "; train: the live tuning samples; test: pending"
"""How a candidate's selection says where its figures come from before it is measured."""


@dataclass(frozen=True)
class CandidateFolder:
    """An answer-aware policy a proposal puts in charge of one cluster, and where it lives."""

    cluster: str
    path: Path
    policy: AnswerPolicy


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "all"


def candidate_folder(
    out_dir: Path,
    cluster: str,
    answer_kind: AnswerKind,
    rule: Rule,
    tuning: PolicyRun,
    usd: PolicyRun,
    config: PoolConfig,
    selection: str,
) -> CandidateFolder:
    """The folder of `rule` for `cluster`, named by its content (the same rule proposed again
    is the same folder, so the same strategy). `tuning` is the rule played on the live tuning
    samples; `usd` the same play costed in USD (the folder states dollars)."""
    params = rule.params()
    digest = hashlib.sha256(
        json.dumps([rule.kind, answer_kind, params], sort_keys=True).encode()
    ).hexdigest()[:10]
    models = [m for m in config.names if m in rule.asks()]
    today = time.strftime("%Y-%m-%d")
    policy = AnswerPolicy(
        schema_version=FOLDER_SCHEMA,
        kind=rule.kind,
        name=f"{rule.kind}:{cluster}",
        answer_kind=answer_kind,
        models=models,
        params=params,
        prices={
            m: Price(
                input_per_mtok=config.get(m).price_in,
                output_per_mtok=config.get(m).price_out,
                source="the pool file of the evolve run",
                date=today,
            )
            for m in models
        },
        train=Figures(
            questions=len(tuning.correct),
            accuracy=round(100 * float(tuning.correct.mean()), 4),
            usd_per_question=float(usd.cost.mean()),
            calls_per_question=float(tuning.calls.mean()),
        ),
        test=PENDING,
        records=[],
        selection=selection + PENDING_SOURCES,
        created_by="consortium evolve",
    )
    return CandidateFolder(
        cluster, out_dir / "answers" / f"{_slug(cluster)}-{rule.kind}-{digest}", policy
    )


def write_candidate(folder: CandidateFolder) -> None:
    write_policy(folder.path, folder.policy)


def figures(results: Sequence[TaskResult]) -> Figures:
    """A policy's live results on some tasks as a folder's figures."""
    n = len(results) or 1
    return Figures(
        questions=len(results),
        accuracy=round(100 * sum(r.grade.correct for r in results) / n, 4),
        usd_per_question=sum(r.cost for r in results) / n,
        calls_per_question=sum(r.calls for r in results) / n,
    )


def with_measured_figures(
    folder: CandidateFolder,
    tuning: Sequence[TaskResult],
    heldout: Sequence[TaskResult],
    round_: int,
) -> CandidateFolder:
    """The folder rewritten with its policy's live figures: train on the cluster's tuning tasks,
    test on its held-out tasks of the round (the guard's evidence)."""
    own_tuning = [r for r in tuning if r.task.dataset == folder.cluster]
    own_heldout = [r for r in heldout if r.task.dataset == folder.cluster]
    selection = folder.policy.selection.removesuffix(PENDING_SOURCES)
    policy = folder.policy.model_copy(
        update={
            "train": figures(own_tuning),
            "test": figures(own_heldout),
            "selection": f"{selection}; train: its live run on the round-{round_} tuning "
            f"tasks; test: on the round-{round_} held-out tasks",
        }
    )
    done = CandidateFolder(folder.cluster, folder.path, policy)
    write_candidate(done)
    return done


def write_adopted(
    folder: CandidateFolder, out_dir: Path, round_: int, reason: str, evolve_id: str
) -> Path:
    """OUT/adopted/round-N/CLUSTER: the adopted policy of a cluster, with the guard's reason."""
    path = out_dir / "adopted" / f"round-{round_}" / _slug(folder.cluster)
    policy = folder.policy.model_copy(
        update={
            "selection": f"{folder.policy.selection}; adopted by the guard: {reason}",
            "created_by": f"consortium evolve {evolve_id}",
        }
    )
    write_policy(path, policy)
    return path
