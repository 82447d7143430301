"""One run of the adaptive pipeline's stages that train and measure (the report is built from
the work folder by `consortium.reports.conductor_adaptive`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from consortium.pool.config import PoolConfig
from consortium.train.conductor.adaptive.evaluate import TeamScores, stage_eval
from consortium.train.conductor.adaptive.request import AdaptiveRequest
from consortium.train.conductor.adaptive.work import Work, stage_shapes, stage_train, stage_warm


class RecordsPool(Protocol):
    """The mixed pool of recorded models (`demo.served_team.ReplayedRecords`): its configuration
    for the stages that call no worker, and served for those that do."""

    def pool(self, base_url: str = ...) -> PoolConfig: ...

    def served(self) -> AbstractContextManager[PoolConfig]: ...


def run_adaptive(request: AdaptiveRequest, records: RecordsPool, team_scores: TeamScores) -> Work:
    """The stages `request.stages` names, in order: warm, shapes, train, eval (each resumes from
    what the work folder holds). The work folder, for the report."""
    stages = set(request.stages.split(","))
    work = Work(request)
    if "warm" in stages:
        stage_warm(work, records.pool())
    if "shapes" in stages:
        stage_shapes(work, records.pool())
    if stages & {"train", "eval"}:
        with records.served() as pool:
            if "train" in stages:
                stage_train(work, pool)
            if "eval" in stages:
                stage_eval(work, pool, team_scores)
    return work
