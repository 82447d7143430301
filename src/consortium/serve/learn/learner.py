"""The learning server's side of each request: what was served is queued for the traffic store,
feedback is checked and written, a refit starts in a worker every `refit_every` labels, and an
adopted version is swapped in through `on_adopt` (the server, between requests).

Replicas (several servers on one PostgreSQL store and one DIR): the store's refit lock lets one
refit at a time, a refit first takes up the newest version in DIR as its incumbent, and between
requests each replica looks in DIR (at most every `follow_every` seconds, off the request path)
for a version adopted since it started, and swaps it in the same way; it also counts the labels
others wrote (a replica, `consortium feedback import`) toward its next refit."""

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
from consortium.records.schema import AnswerKind, answer_kind_named
from consortium.runtime.caller import CallSummary, TaskCaller
from consortium.serve.learn import versions
from consortium.serve.learn.explore import Exploration
from consortium.serve.learn.export import export_labelled
from consortium.serve.learn.labels import check_reference
from consortium.serve.learn.refit import refit
from consortium.serve.learn.rows import Served
from consortium.serve.learn.settings import LearnSettings
from consortium.serve.learn.store import (
    Label,
    TrafficStore,
    store_url,
    unknown_id,
)
from consortium.serve.learn.writer import TrafficWriter

REFITS = "refits"
ANSWER_KIND = "answer_kind.txt"
"""The serving policy's answer kind, in DIR: how `consortium feedback import` reads references."""


def answer_kind_of(folder: Path) -> AnswerKind:
    """The serving policy's answer kind, as the learning server wrote it in DIR."""
    kind_file = folder / ANSWER_KIND
    if not kind_file.is_file():
        raise ConfigError(f"{folder}: not a folder of serve --learn (no {ANSWER_KIND})")
    return answer_kind_named(kind_file.read_text().strip(), str(kind_file))


def last_refit(folder: Path) -> int:
    """The labels DIR's last refit counted (by any replica: its folder's number); 0 if none."""
    root = folder / REFITS
    names = [path.name[1:] for path in root.glob("r*")] if root.is_dir() else []
    return max((int(name) for name in names if name.isdigit()), default=0)


def start_policy(settings: LearnSettings, policy: str) -> tuple[str, str]:
    """The folder to serve and its version: --policy when it is one of DIR's versions (a
    rollback), else DIR's last adopted version, else --policy as v0."""
    named = versions.version_of(policy, settings.folder)
    if named is not None:
        return policy, named
    last = versions.latest(settings.folder)
    return (str(last), last.name) if last is not None else (policy, "v0")


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
        if version == "v0" and versions.version_of(policy, settings.folder) is None:
            versions.write_start(settings.folder, self.incumbent)
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
        now = time.time()
        spent, recent = self.store.shadow_spent(since=now - 3600)  # the caps outlive a restart
        self.exploration.take_up(spent, [(now - at, cost) for at, cost in recent])
        self.on_adopt: Callable[[Coordinator, str], None] = lambda coordinator, version: None
        self.explorer: Callable[[str], TaskCaller] | None = None
        """The server's caller for a request's shadow calls (by response id): what `--explore-on
        label` explores with when a label arrives."""
        self._exploring: set[asyncio.Task[None]] = set()
        self.refits: list[dict[str, Any]] = []
        self._refit: asyncio.Task[None] | None = None
        newest = versions.latest(settings.folder)
        self._known = max(versions.number(version), versions.number(newest.name) if newest else 0)
        """The newest version this process knows of: a rollback to vK does not follow DIR's
        later versions, only those adopted after it started."""
        self._followed_at = time.monotonic()
        self._following: asyncio.Task[None] | None = None

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
        """Queue what a request served (returns at once; its rows are built by the writer)."""
        self.writer.served(
            Served(response_id, question, answer, answered_by, version, explored, time.time(), made)
        )

    def explores_answer(self) -> bool:
        """Whether the request being answered is explored (one seeded draw a request, under
        `--explore-on answer`)."""
        return self.settings.explore_on == "answer" and self.exploration.chosen()

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
        self.writer.shadow(response_id, list(caller.made))

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
        on_label = self.explorer is not None and self.settings.explore_on == "label"
        if on_label and self.exploration.chosen():  # count the label once its samples are in
            task = asyncio.create_task(self._explore_labelled(request))
            self._exploring.add(task)
            task.add_done_callback(self._exploring.discard)
            return
        self._count(await asyncio.to_thread(self.store.labelled_count))

    async def _explore_labelled(self, request: dict[str, Any]) -> None:
        """`--explore-on label`: the shadow calls of a request whose label came, then the label
        counted toward the next refit (which then sees every model's sample of it)."""
        response_id = str(request["response_id"])
        assert self.explorer is not None
        try:
            asked = set(await asyncio.to_thread(self.store.models_asked, response_id))
            await self.explore(response_id, str(request["question"]), asked,
                               self.explorer(response_id))  # fmt: skip
            await self.writer.flush()
        except Exception as error:  # the label stands; its request stays unexplored
            self.log(f"learn: exploring {response_id} on its label failed: {error}")
        self._count(await asyncio.to_thread(self.store.labelled_count))

    def _count(self, labelled: int) -> None:
        """Take up the store's count of labels (every replica's, `feedback import`'s) and start
        a refit when `refit_every` arrived since the last."""
        self.labelled = max(self.labelled, labelled)  # a count read earlier may come in later
        due = self.labelled - self._refitted_at >= self.settings.refit_every
        if due and (self._refit is None or self._refit.done()):
            self._refitted_at = self.labelled
            self._refit = asyncio.create_task(self._refit_and_swap(self.labelled))

    async def _refit_and_swap(self, labelled: int) -> None:
        try:
            adopted = await asyncio.to_thread(self._refit_blocking, labelled)
        except Exception as error:  # a failed refit leaves the serving policy; say why
            self.log(f"learn: refit at {labelled} labels failed: {error}")
            adopted = None
        if adopted is not None:
            await self._swap_in(*adopted)
        # labels that came while it ran were not counted: they start the next refit now, not
        # only when one more label comes (after the last label of a stream, none comes)
        self._refit = None
        self._count(self.labelled)

    async def _swap_in(self, policy: AnswerPolicy, name: str) -> None:
        """Serve version `name` from the next request on, unless a newer one came first."""
        folder = str(versions.policies_dir(self.settings.folder) / name)
        coordinator = await asyncio.to_thread(self.build, folder)
        self._known = max(self._known, versions.number(name))
        if versions.number(name) <= versions.number(self.version):
            return
        self.incumbent, self.version, self.serving = policy, name, folder
        self.on_adopt(coordinator, name)
        self.log(f"learn: {name} ({policy.name}) serves from now on")

    def follow(self) -> None:
        """Between requests: at most every `follow_every` seconds, look in DIR (in a worker
        thread) for a version another replica adopted since this one started, and swap it in;
        and count the labels others added to the store (a replica, `feedback import`)."""
        now = time.monotonic()
        if now - self._followed_at < self.settings.follow_every:
            return
        if self._following is not None and not self._following.done():
            return
        self._followed_at = now
        self._following = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        try:
            newer, labelled = await asyncio.to_thread(self._look_in_dir)
            if newer is not None:
                await self._swap_in(*newer)
            self._count(labelled)
        except Exception as error:  # the version serving stays; say why
            self.log(f"learn: looking in {self.settings.folder} failed: {error}")

    def _look_in_dir(self) -> tuple[tuple[AnswerPolicy, str] | None, int]:
        return self._newer_version(), self.store.labelled_count()

    def _newer_version(self) -> tuple[AnswerPolicy, str] | None:
        """DIR's newest version when it is newer than any this process knows of."""
        newest = versions.latest(self.settings.folder)
        if newest is None or versions.number(newest.name) <= self._known:
            return None
        return read_policy(newest), newest.name

    def _refit_blocking(self, labelled: int) -> tuple[AnswerPolicy, str] | None:
        with self.store.refit_lock() as held:
            if not held:
                entry = {"labelled": labelled, "version": self.version, "adopted": None,
                         "reason": "another replica is refitting"}  # fmt: skip
                self.refits.append(entry)
                self.log(f"learn: refit at {labelled} labels: {entry['reason']}")
                return None
            if 0 <= labelled - last_refit(self.settings.folder) < self.settings.refit_every:
                return None  # another replica refitted on these labels (it saw them first)
            marked = self.settings.folder / REFITS / f"r{labelled:06d}"  # for the other replicas
            marked.mkdir(parents=True, exist_ok=True)
            taken_up = self._newer_version()  # the incumbent is the newest adopted version
            return self._refit_locked(labelled, *(taken_up or (self.incumbent, self.version)))

    def _refit_locked(
        self, labelled: int, incumbent: AnswerPolicy, version: str
    ) -> tuple[AnswerPolicy, str] | None:
        """The refit against `incumbent` (version `version`); the version to serve after it:
        the one it adopted, else `version` when it is not the one serving, else None."""
        kept = (incumbent, version) if version != self.version else None
        folder = self.settings.folder / REFITS / f"r{labelled:06d}"
        records = export_labelled(folder, self.store.labelled(), incumbent, self.models)
        entry: dict[str, Any] = {"labelled": labelled, "version": version}
        if records is None:
            entry |= {"adopted": None, "reason": "no labelled request sampled every model"}
            self.refits.append(entry)
            self.log(f"learn: refit at {labelled} labels: {entry['reason']}")
            return kept
        outcome = refit(records, incumbent, self.settings.guard, self.settings.lam)
        adopted = None
        if outcome.adopted is not None:
            evidence = {**outcome.evidence, "reason": outcome.reason, "replaces": version}
            adopted = (outcome.adopted, versions.write_version(
                self.settings.folder, outcome.adopted, evidence
            ))  # fmt: skip
        entry |= {"adopted": adopted[1] if adopted else None, "reason": outcome.reason}
        self.refits.append(entry)
        self.log(
            f"learn: refit at {labelled} labels: {entry['adopted'] or 'kept'}: {outcome.reason}"
        )
        return adopted or kept

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
        await asyncio.gather(*self._exploring)  # each may start a refit
        if self._following is not None:
            await self._following  # it may start a refit
        while self._refit is not None and not self._refit.done():
            await self._refit  # it may start the next, on labels that came meanwhile
        self.writer.close()
        self.store.close()
