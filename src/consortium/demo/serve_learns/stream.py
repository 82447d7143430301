"""One stream of traffic through a real `serve --learn` over the HTTP replay of a records set
(the report's driver): the train split in shuffled order, asked by concurrent clients; a seeded
share of the answers labelled with the records' verdict, each label sent once a set number of
later requests were answered. What each answer was (its version, the records' verdict of its
text, its $) is kept for the learning curve."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from consortium.coord.answers.folder import write_policy
from consortium.demo.serve_learns.singles import single_policy
from consortium.records.split import split_of
from consortium.records.store import Records, load_records
from consortium.replay.launch import ReplayServerProcess
from consortium.runtime.launch import ChildServer
from consortium.serve.headers import COST, POLICY_VERSION
from consortium.serve.learn.versions import policies_dir


@dataclass(frozen=True)
class StreamPlan:
    records: Path
    start: str
    """Where the server starts: "cheapest" or "most-accurate" (`singles.single_policy`)."""
    lam: float = 0.0
    label_share: float = 0.3
    label_delay: int = 50
    """Answers given between a request's answer and its label."""
    labels: str = "verdict"
    """verdict (the records' verdict, as a reference where the kind takes one), or flipped."""
    clients: int = 16
    explore: float = 0.25
    explore_on: str = "answer"
    """`serve --explore-on`: answer or label."""
    refit_every: int = 20
    seed: int = 0
    paced: bool = True
    """Clients wait while the server refits (`_traffic`)."""


@dataclass(frozen=True)
class Answered:
    question_id: str
    version: str
    correct: bool
    cost: float


@dataclass
class StreamResult:
    plan: StreamPlan
    answered: list[Answered] = field(default_factory=list)
    """In the order the answers came."""
    final: Path | None = None
    """The policy folder serving at the end (None: the start policy)."""
    start: Path | None = None
    refits: list[dict[str, Any]] = field(default_factory=list)
    explore_usd: float = 0.0
    labels: int = 0
    failed: int = 0
    """Requests not answered (a 5xx: e.g. every model the policy asked had no recorded sample)."""
    seconds: float = 0.0

    @property
    def serving(self) -> Path:
        """The policy folder serving at the end: the adopted one, else the start."""
        served = self.final or self.start
        assert served is not None, "run_stream sets the start policy"
        return served


class _Verdicts:
    """The records' verdict of a served text: the row of (question, model) with that text."""

    def __init__(self, records: Path) -> None:
        self.by_text: dict[tuple[str, str, str], bool] = {}
        self.questions: dict[str, tuple[str, str | None]] = {}
        for row in load_records(records).table.to_pylist():
            key = (row["question_id"], row["model"], row["response"] or "")
            self.by_text[key] = bool(row["correct"])
            self.questions.setdefault(row["question_id"], (row["question"], row["reference"]))

    def of(self, question_id: str, model: str | None, text: str) -> bool:
        return self.by_text.get((question_id, model or "", text), False)


def run_stream(plan: StreamPlan, work: Path, say: Any = print) -> StreamResult:
    work.mkdir(parents=True, exist_ok=True)
    records = load_records(plan.records)
    start = work / "start"
    write_policy(start, single_policy(plan.records, plan.start))
    pool = work / "replay.toml"
    learn = work / "learn"
    result = StreamResult(plan, start=start)
    with ReplayServerProcess(None, "--write-pool", str(pool), records=[plan.records]):
        server = ChildServer(
            "serve", "--pool", str(pool), "--policy", str(start), "--learn", str(learn),
            "--traces", f"sqlite:///{work / 'traces.db'}", "--refit-every", str(plan.refit_every),
            "--explore", str(plan.explore), "--explore-on", plan.explore_on,
            "--learn-lam", str(plan.lam), "--seed", str(plan.seed),
            ready_path="/health", label="serve --learn", env={"CONSORTIUM_SERVE_TOKEN": ""},
        )  # fmt: skip
        with server:
            began = time.monotonic()
            asyncio.run(_traffic(plan, f"{server.root}/v1", _Verdicts(plan.records), result))
            policy = _settled(f"{server.root}/v1")
            result.seconds = time.monotonic() - began
    result.refits = list(policy["refits"])
    result.explore_usd = float(policy["explore_spent_usd"])
    if policy["version"] != "v0":
        result.final = policies_dir(learn) / policy["version"]
    say(f"{records.manifest.dataset} from {plan.start}: {len(result.answered)} answers, "
        f"{result.labels} labels, serving {policy['version']} at the end")  # fmt: skip
    return result


def stream_questions(records: Records, seed: int, label_share: float) -> tuple[list[str], set[str]]:
    """The stream's requests: the train split's question ids in shuffled order (`seed`), and the
    seeded share of them that is labelled."""
    ids = dict.fromkeys(records.table.column("question_id").to_pylist())
    order = [q for q in ids if split_of(records.manifest.dataset, q) == "train"]
    random.Random(seed).shuffle(order)
    chooser = random.Random(seed + 1)
    return order, {q for q in order if chooser.random() < label_share}


async def _traffic(plan: StreamPlan, url: str, verdicts: _Verdicts, result: StreamResult) -> None:
    records = load_records(plan.records)
    manifest = records.manifest
    order, labelled = stream_questions(records, plan.seed, plan.label_share)
    pending: asyncio.Queue[str] = asyncio.Queue()
    for question_id in order:
        pending.put_nowait(question_id)
    waiting: list[tuple[int, dict[str, Any]]] = []  # (answers when due, feedback body)
    limits = httpx.Limits(max_connections=plan.clients + 2)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:

        async def send_due(final: bool = False) -> None:
            due = [body for at, body in waiting if final or at <= len(result.answered)]
            waiting[:] = [
                (at, body) for at, body in waiting if not final and at > len(result.answered)
            ]
            for body in due:
                reply = await http.post("/feedback", json=body)
                if reply.status_code != 200:
                    raise RuntimeError(f"feedback refused: {reply.text}")
                result.labels += 1

        refits_done = asyncio.Lock()

        async def wait_for_refits() -> None:
            """Hold every client while the server refits (one of them asks; the others wait on
            the lock): the replay answers in milliseconds, faster than a refit or any real pool,
            so unpaced traffic would run past every refit."""
            async with refits_done:
                while (await http.get("/policy")).json()["refitting"]:
                    await asyncio.sleep(0.1)

        async def client() -> None:
            while not pending.empty():
                question_id = pending.get_nowait()
                question, reference = verdicts.questions[question_id]
                body = {"model": "consortium", "messages": [{"role": "user", "content": question}]}
                reply = await http.post("/chat/completions", json=body)
                if reply.status_code != 200:  # no answer: wrong, and nothing to label
                    result.failed += 1
                    result.answered.append(Answered(question_id, "", False, 0.0))
                    continue
                data = reply.json()
                text = data["choices"][0]["message"]["content"]
                answered_by = (data["consortium"].get("answered_by") or [None])[0]
                correct = verdicts.of(question_id, answered_by, text)
                result.answered.append(
                    Answered(question_id, reply.headers[POLICY_VERSION], correct,
                             float(reply.headers[COST]))
                )  # fmt: skip
                if question_id in labelled:
                    label = _label(plan.labels, manifest.answer_kind, correct, reference)
                    waiting.append(
                        (len(result.answered) + plan.label_delay, {"id": data["id"], **label})
                    )
                await send_due()
                if plan.paced:
                    await wait_for_refits()

        await asyncio.gather(*(client() for _ in range(plan.clients)))
        await send_due(final=True)


def _label(labels: str, kind: str, correct: bool, reference: str | None) -> dict[str, Any]:
    """The records' verdict: as the reference (every sample graded) where the kind takes one,
    else as a verdict on the answer; flipped: the opposite verdict."""
    if labels == "flipped":
        return {"correct": not correct}
    if kind != "code" and reference is not None:
        return {"reference": reference}
    return {"correct": correct}


def _settled(url: str) -> dict[str, Any]:
    """The server's policy once no refit runs (the last labels may have started one)."""
    deadline = time.monotonic() + 600
    while True:
        policy: dict[str, Any] = httpx.get(f"{url}/policy", timeout=30).json()
        if not policy["refitting"] or time.monotonic() > deadline:
            return policy
        time.sleep(0.5)
