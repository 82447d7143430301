"""Recorded outcomes of real models (the RouterDC data folder), loaded into one index.

Two sources, each a subfolder of the data directory:

- ``split2_model7``: per-question scores of 7 open 7–8B models. Sampled datasets (GSM8K, HumanEval,
  MBPP, JavaScript: 10 samples; MATH prealgebra: 1) record the fraction of correct samples, which
  is replayed as the probability of a correct answer. Multiple-choice datasets (MMLU, CMMLU, C-Eval,
  ARC) are scored by log-likelihood: ``score > 0`` exactly when the model's argmax option is right,
  so the replayed answer is right with probability 1 when ``score > 0`` and 0 otherwise.
- ``routerbench_zs``: the real response texts of 11 models with 0/1 correctness; replay returns the
  recorded text and grades it by the recorded correctness (empty cells count as wrong).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from consortium.core.errors import ConfigError
from consortium.records.errors import RecordsError
from consortium.records.importers.routerbench import RouterBenchRow, routerbench_rows
from consortium.records.importers.split2 import split2_scores

if TYPE_CHECKING:
    from consortium.replay.protocol_turns import RecordedDebate

Source = Literal["split2", "routerbench", "records"]
SOURCES: tuple[Source, ...] = ("split2", "routerbench")
"""The sources of the RouterDC data folder."""
ALL_SOURCES: tuple[Source, ...] = (*SOURCES, "records")
"""Those and records folders (consortium.replay.records)."""
_FOLDERS: dict[Source, str] = {"split2": "split2_model7", "routerbench": "routerbench_zs"}
Kind = Literal["sampled", "choice"]

# file name -> (dataset, split, kind)
SPLIT2_FILES: dict[str, tuple[str, str, Kind]] = {
    "gsm8k-train.json": ("gsm8k", "train", "sampled"),
    "gsm8k-test.json": ("gsm8k", "test", "sampled"),
    "humaneval_train.json": ("humaneval", "train", "sampled"),
    "humaneval_test.json": ("humaneval", "test", "sampled"),
    "mmlu_train.json": ("mmlu", "train", "choice"),
    "mmlu_test.json": ("mmlu", "test", "choice"),
    "cmmlu_train.json": ("cmmlu", "train", "choice"),
    "cmmlu_test.json": ("cmmlu", "test", "choice"),
    "arc_challenge_train.json": ("arc_challenge", "train", "choice"),
    "arc_challenge_test.json": ("arc_challenge", "test", "choice"),
    "arc_easy_train.json": ("arc_easy", "train", "choice"),
    "arc_easy_test.json": ("arc_easy", "test", "choice"),
    "MATH_prealgebra.json": ("math_prealgebra", "test", "sampled"),
    "mbpp.json": ("mbpp", "test", "sampled"),
    "ceval.json": ("ceval", "test", "choice"),
    "javascript.json": ("javascript", "test", "sampled"),
}
ROUTERBENCH_FILES: dict[str, tuple[str, str]] = {
    f"{name}_{split}.csv": (f"rb_{dataset}", split)
    for name, dataset in (
        ("arc_challenge", "arc_challenge"),
        ("mbpp", "mbpp"),
        ("winograde", "winogrande"),
    )
    for split in ("train", "test")
}


@dataclass(frozen=True, slots=True)
class RecordedSample:
    """One recorded output of a records folder (consortium.records), served as recorded."""

    text: str
    correct: bool
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """One recorded question and how each model did on it."""

    source: Source
    dataset: str
    split: str
    index: int
    question: str
    p_correct: dict[str, float]
    """Probability that a replayed answer of each model is right (see module docstring)."""
    responses: dict[str, str] | None = None
    costs: dict[str, float] | None = None
    samples: dict[str, tuple[RecordedSample, ...]] | None = None
    """Records folders: each model's recorded samples, in sample order (the k-th ask gets the
    k-th; there is no (k+1)-th beyond them)."""
    question_id: str | None = None

    @property
    def id(self) -> str:
        return f"{self.source}/{self.dataset}/{self.split}/{self.index}"

    def recorded_texts(self) -> Iterator[tuple[str, str]]:
        """(model, text) of every answer served as recorded: a records folder's samples, else
        RouterBench's responses; none for split2, whose answers the replay writes itself."""
        if self.samples is not None:
            for model, samples in self.samples.items():
                yield from ((model, sample.text) for sample in samples)
        elif self.responses is not None:
            yield from self.responses.items()


@dataclass
class ReplayData:
    records: list[ReplayRecord]
    files: list[str]
    """The data files loaded, relative to the data directory, for reports."""
    duplicates_dropped: int = 0
    by_question: dict[str, list[ReplayRecord]] = field(default_factory=dict)
    models: dict[Source, list[str]] = field(default_factory=dict)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Declared USD per million tokens (in, out) of models whose data carry prices (records)."""
    debates: dict[str, RecordedDebate] = field(default_factory=dict)
    """Recorded debates by question text (records folders with a protocol), whose turns the
    server answers (`consortium.replay.protocol_turns`)."""

    def __post_init__(self) -> None:
        for record in self.records:
            self.by_question.setdefault(record.question.strip(), []).append(record)
            names = self.models.setdefault(record.source, [])
            for model in record.p_correct:
                if model not in names:
                    names.append(model)

    @property
    def all_models(self) -> list[str]:
        return [m for source in ALL_SOURCES for m in self.models.get(source, [])]

    def lookup(self, question: str, model: str) -> ReplayRecord | None:
        for record in self.by_question.get(question.strip(), ()):
            if model in record.p_correct:
                return record
        return None

    def select(
        self,
        source: Source | None = None,
        datasets: Iterable[str] | None = None,
        split: str | None = None,
    ) -> list[ReplayRecord]:
        wanted = set(datasets) if datasets is not None else None
        return [
            r
            for r in self.records
            if (source is None or r.source == source)
            and (wanted is None or r.dataset in wanted)
            and (split is None or r.split == split)
        ]

    def description(self, source: Source | None = None) -> str:
        """Names the pool and its files, e.g. `replay of recorded outcomes (routerdc/…: a, b)`."""
        folders: dict[str, list[str]] = {}
        for path in self.files:
            folder, _, name = path.rpartition("/")
            if source is None or folder.endswith(_FOLDERS.get(source, "")):
                folders.setdefault(folder, []).append(name)
        listed = "; ".join(f"{folder}/: {', '.join(names)}" for folder, names in folders.items())
        # The declared simulation parameters travel with every report that names this pool.
        return (
            f"replay of recorded outcomes ({listed}; every role replays the recorded answer, "
            "no Thinker/Verifier simulation)"
        )


def load_replay(data_dir: str | Path, sources: Sequence[Source] = SOURCES) -> ReplayData:
    """Load the recorded outcomes under `data_dir` (the `routerdc` folder)."""
    root = Path(data_dir)
    if not root.is_dir():
        raise ConfigError(f"replay data folder not found: {root}")
    records: list[ReplayRecord] = []
    files: list[str] = []
    for source in sources:
        if source not in _FOLDERS:
            raise ConfigError(f"unknown replay source {source!r}; known: {', '.join(SOURCES)}")
        load = _load_split2 if source == "split2" else _load_routerbench
        try:
            loaded, used = load(root / _FOLDERS[source])
        except RecordsError as error:
            raise ConfigError(str(error)) from None
        records += loaded
        files += [f"{root.name}/{name}" for name in used]
    if not records:
        raise ConfigError(
            f"no recorded outcomes found under {root} (expected {', '.join(SOURCES)})"
        )
    kept = _drop_duplicates(records)
    return ReplayData(kept, files, duplicates_dropped=len(records) - len(kept))


def _drop_duplicates(records: list[ReplayRecord]) -> list[ReplayRecord]:
    """One record per (source, question text): a test record wins over a train one, else the first.

    The benchmarks repeat a few questions (MMLU, ARC, C-Eval, MBPP), sometimes with different
    recorded outcomes; a server that finds questions by their text can answer only one of them, and
    dropping the train copy of a test question also keeps test questions out of training.
    """
    chosen: dict[tuple[str, str], ReplayRecord] = {}
    for record in sorted(records, key=lambda r: r.split != "test"):
        chosen.setdefault((record.source, record.question.strip()), record)
    keep = {id(r) for r in chosen.values()}
    return [r for r in records if id(r) in keep]


def _load_split2(folder: Path) -> tuple[list[ReplayRecord], list[str]]:
    records: list[ReplayRecord] = []
    used: list[str] = []
    if not folder.is_dir():
        return records, used
    for name, (dataset, split, kind) in SPLIT2_FILES.items():
        path = folder / name
        if not path.exists():
            continue
        for index, (question, scores) in enumerate(split2_scores(path)):
            p_correct = {
                model: (s if kind == "sampled" else float(s > 0)) for model, s in scores.items()
            }
            records.append(ReplayRecord("split2", dataset, split, index, question, p_correct))
        used.append(f"split2_model7/{name}")
    return records, used


def _load_routerbench(folder: Path) -> tuple[list[ReplayRecord], list[str]]:
    records: list[ReplayRecord] = []
    used: list[str] = []
    if not folder.is_dir():
        return records, used
    for name, (dataset, split) in ROUTERBENCH_FILES.items():
        path = folder / name
        if not path.exists():
            continue
        models, rows = routerbench_rows(path)
        for index, row in enumerate(rows):
            records.append(
                ReplayRecord(
                    "routerbench",
                    dataset,
                    split,
                    index,
                    row.prompt,
                    _routerbench_verdicts(row, models),
                    row.responses,
                    {m: row.costs[m] or 0.0 for m in models},
                )
            )
        used.append(f"routerbench_zs/{name}")
    return records, used


def _routerbench_verdicts(row: RouterBenchRow, models: list[str]) -> dict[str, float]:
    """0/1 per model. A few ARC cells are empty (not graded): such a response takes the verdict
    recorded for the same text from another model of the row, else counts as wrong; so a response
    text has one verdict per question, which is what lets a grader judge the text alone."""
    graded: dict[str, float] = {}
    for model in models:
        verdict = row.verdicts[model]
        if verdict is not None:
            graded.setdefault(row.responses[model].strip(), float(verdict))
    return {
        model: float(verdict)
        if (verdict := row.verdicts[model]) is not None
        else graded.get(row.responses[model].strip(), 0.0)
        for model in models
    }


def reference_token(question: str) -> str:
    """The replay's stand-in for a right answer to a question that has no recorded reference."""
    return "R" + hashlib.blake2b(question.strip().encode(), digest_size=5).hexdigest()
