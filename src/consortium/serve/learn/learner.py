"""The learning server's side of each request: what was served is queued for the traffic store,
feedback is checked and written, a refit starts in a worker every `refit_every` labels, and an
adopted version is swapped in through `on_adopt` (the server, between requests)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from consortium.coord.answers.folder import AnswerPolicy, read_policy
from consortium.coord.base import Coordinator
from consortium.core.errors import AgentError, BudgetExceeded, ConfigError
from consortium.core.types import user
from consortium.runtime.caller import CallSummary, TaskCaller
from consortium.serve.learn import versions
from consortium.serve.learn.explore import Exploration
from consortium.serve.learn.export import export_labelled
from consortium.serve.learn.labels import check_reference
from consortium.serve.learn.refit import refit
from consortium.serve.learn.settings import LearnSettings
from consortium.serve.learn.store import (
    Label,
    ServedRequest,
    TrafficStore,
    store_url,
    unknown_id,
)
from consortium.serve.learn.writer import TrafficWriter

REFITS = "refits"
ANSWER_KIND = "answer_kind.txt"
"""The serving policy's answer kind, in DIR: how `consortium feedback import` reads references."""


def start_policy(settings: LearnSettings, policy: str) -> tuple[str, str]:
    """The folder to serve and its version: --policy when it is one of DIR's versions (a
    rollback), else DIR's last adopted version, else --policy as v0."""
    named = versions.version_of(policy, settings.folder)
    if named is not None:
        return policy, named
    last = versions.latest(settings.folder)
    return (str(last), last.name) if last is not None else (policy, "v0")


def call_rows(response_id: str, made: Sequence[CallSummary], shadow: bool) -> list[dict[str, Any]]:
    """A request's calls as `learn_outputs` rows; a call sent without a seed is numbered by its
    model's earlier calls in the request."""
    counts: dict[str, int] = {}
    rows = []
    for call in made:
        index = counts.get(call.model, 0)
        counts[call.model] = index + 1
        rows.append(
            {
                "response_id": response_id,
                "model": call.model,
                "sample": call.sample if call.sample is not None else index,
                "response": None if call.failed else call.text,
                "tokens_in": call.prompt_tokens,
                "tokens_out": call.completion_tokens,
                "cost_usd": call.cost,
                "latency_s": call.latency,
                "error": call.error_kind if call.failed else None,
                "shadow": shadow,
            }
        )
    return rows


def open_learner(
    settings: LearnSettings,
    policy: str,
    traces: str,
    models: Sequence[str],
    build: Callable[[str], Coordinator],
    log: Callable[[str], None],
) -> Learner:
    """The learner of `serve --learn`, serving DIR's last adopted version (or --policy)."""
    folder, version = start_policy(settings, policy)
    if folder != policy:
        log(f"learn: {settings.folder} adopted {version}; it serves ({folder})")
    return Learner(
        settings, store_url(settings.folder, traces), folder, version, models, build, log
    )


class Learner:
    def __init__(
        self,
        settings: LearnSettings,
        store_url: str,
        policy: str,
        version: str,
        models: Sequence[str],
        build: Callable[[str], Coordinator],
        log: Callable[[str], None],
    ) -> None:
        try:
            self.incumbent: AnswerPolicy = read_policy(Path(policy))
        except ConfigError as error:
            raise ConfigError(
                f"--learn refits answer-aware policy folders; --policy {policy}: {error}"
            ) from None
        self.settings = settings
        self.version = version
        self.models = list(models)
        self.build = build
        self.log = log
        settings.folder.mkdir(parents=True, exist_ok=True)
        (settings.folder / ANSWER_KIND).write_text(self.incumbent.answer_kind + "\n")
        self.coordinator = build(policy)
        self.serving = policy
        """The folder of the version serving: what a reload of the pool file builds again."""
        self.store = TrafficStore(store_url)
        self.writer = TrafficWriter(self.store, log)
        self.labelled = self.store.labelled_count()
        self._refitted_at = self.labelled
        self.exploration = Exploration(
            settings.explore, settings.explore_per_hour, settings.explore_total, settings.seed
        )
        self.on_adopt: Callable[[Coordinator, str], None] = lambda coordinator, version: None
        self.refits: list[dict[str, Any]] = []
        self._refit: asyncio.Task[None] | None = None

    def served(
        self,
        response_id: str,
        question: str,
        answer: str,
        answered_by: str | None,
        version: str,
        explored: bool,
        made: Sequence[CallSummary],
    ) -> None:
        """Queue what a request served (returns at once)."""
        request = {
            "response_id": response_id,
            "question": question,
            "answer": answer,
            "answered_by": answered_by,
            "version": version,
            "explored": explored,
            "created_at": time.time(),
        }
        self.writer.served(ServedRequest(request, call_rows(response_id, made, shadow=False)))

    async def explore(
        self, response_id: str, question: str, asked: set[str], caller: TaskCaller
    ) -> None:
        """Ask every pool model the policy did not ask (sample 0), after the answer was sent;
        their replies are recorded, never returned."""

        async def ask(model: str) -> None:
            with contextlib.suppress(AgentError, BudgetExceeded):  # kept in caller.made as failed
                await caller.call(model, [user(question)], role="shadow", seed=0)

        await asyncio.gather(*(ask(m) for m in self.models if m not in asked))
        self.exploration.charge(sum(call.cost for call in caller.made))
        self.writer.shadow(call_rows(response_id, caller.made, shadow=True))

    async def feedback(self, label: Label) -> None:
        """Check and write `label` (FeedbackError: nothing changed), then start a refit when
        `refit_every` labels arrived since the last."""
        await self.writer.flush()
        request = await asyncio.to_thread(self.store.request, label.response_id)
        if request is None:
            raise unknown_id(label.response_id)
        if label.reference is not None:
            check_reference(self.incumbent.answer_kind, label.reference, request["question"])
        await self.writer.label(label)
        self.labelled += 1
        due = self.labelled - self._refitted_at >= self.settings.refit_every
        if due and (self._refit is None or self._refit.done()):
            self._refitted_at = self.labelled
            self._refit = asyncio.create_task(self._refit_and_swap(self.labelled))

    async def _refit_and_swap(self, labelled: int) -> None:
        try:
            adopted = await asyncio.to_thread(self._refit_blocking, labelled)
        except Exception as error:  # a failed refit leaves the serving policy; say why
            self.log(f"learn: refit at {labelled} labels failed: {error}")
            return
        if adopted is None:
            return
        policy, name = adopted
        folder = str(versions.policies_dir(self.settings.folder) / name)
        coordinator = await asyncio.to_thread(self.build, folder)
        self.incumbent, self.version, self.serving = policy, name, folder
        self.on_adopt(coordinator, name)
        self.log(f"learn: {name} ({policy.name}) serves from now on")

    def _refit_blocking(self, labelled: int) -> tuple[AnswerPolicy, str] | None:
        folder = self.settings.folder / REFITS / f"r{labelled:06d}"
        records = export_labelled(folder, self.store.labelled(), self.incumbent, self.models)
        entry: dict[str, Any] = {"labelled": labelled, "version": self.version}
        if records is None:
            entry |= {"adopted": None, "reason": "no labelled request sampled every model"}
            self.refits.append(entry)
            self.log(f"learn: refit at {labelled} labels: {entry['reason']}")
            return None
        outcome = refit(records, self.incumbent, self.settings.guard, self.settings.lam)
        adopted = None
        if outcome.adopted is not None:
            evidence = {**outcome.evidence, "reason": outcome.reason, "replaces": self.version}
            adopted = (outcome.adopted, versions.write_version(
                self.settings.folder, outcome.adopted, evidence
            ))  # fmt: skip
        entry |= {"adopted": adopted[1] if adopted else None, "reason": outcome.reason}
        self.refits.append(entry)
        self.log(
            f"learn: refit at {labelled} labels: {entry['adopted'] or 'kept'}: {outcome.reason}"
        )
        return adopted

    def describe(self) -> dict[str, Any]:
        """What `GET /v1/policy` answers."""
        return {
            "version": self.version,
            "policy": self.incumbent.name,
            "kind": self.incumbent.kind,
            "adopted": [f"v{n}" for n in versions.adopted(self.settings.folder)],
            "labelled": self.labelled,
            "refitting": self._refit is not None and not self._refit.done(),
            "refits": self.refits,
            "explore_spent_usd": self.exploration.spent,
        }

    async def aclose(self) -> None:
        if self._refit is not None and not self._refit.done():
            await self._refit
        self.writer.close()
        self.store.close()
