"""The recorded-outputs format, version 1: the Parquet columns and the manifest.

A data set is a folder with `manifest.json` (the `Manifest` below) and `outputs.parquet`, one row
per (question, model, sample). See docs/records.md for what each field means.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from consortium.core.errors import ConfigError

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
OUTPUTS = "outputs.parquet"

AnswerKind = Literal["number", "latex", "choice", "code", "date", "text"]
DATASET_KINDS: dict[str, AnswerKind] = {
    "gsm8k": "number",
    "arithmetic": "number",
    "math": "latex",
    "humaneval": "code",
    "mbpp": "code",
    "mc": "choice",
    "date": "date",
}
"""The answer kind of the built-in task sets (`tasks.registry`), by their dataset name."""


def answer_kind_named(name: str, where: str) -> AnswerKind:
    """The answer kind called `name`; one line naming `where` (an option) when none is."""
    kinds: tuple[AnswerKind, ...] = get_args(AnswerKind)
    for kind in kinds:
        if kind == name:
            return kind
    raise ConfigError(f"{where}: expected one of {', '.join(kinds)}, got {name!r}")


COLUMNS = pa.schema(
    [
        pa.field("question_id", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("reference", pa.string()),
        pa.field("model", pa.string(), nullable=False),
        pa.field("sample", pa.int32(), nullable=False),
        pa.field("response", pa.string()),
        pa.field("answer", pa.string()),
        pa.field("correct", pa.bool_()),
        pa.field("source_correct", pa.bool_()),
        pa.field("source_score", pa.float64()),
        pa.field("tokens_in", pa.int64(), nullable=False),
        pa.field("tokens_out", pa.int64(), nullable=False),
        pa.field("tokens_estimated", pa.bool_(), nullable=False),
        pa.field("cost_usd", pa.float64(), nullable=False),
        pa.field("cost_estimated", pa.bool_(), nullable=False),
        pa.field("latency_s", pa.float64()),
        pa.field("error", pa.string()),
    ]
)
"""Version 1. `source_score` (the source's stored score, e.g. the fraction of 10 samples right)
and `cost_estimated` (cost computed from the manifest's declared prices) refine the contract."""

TURN_COLUMNS = pa.schema(
    [
        *COLUMNS,
        pa.field("turn", pa.int32()),
        pa.field("seen", pa.list_(pa.string())),
        pa.field("source_answer", pa.string()),
    ]
)
"""Version 1 with turns: the columns of a folder that recorded a protocol (`Manifest.protocol`).
`turn` is the row's place in the recorded exchange (0: the first answers, given to the question
alone; then one speaker a turn), `seen` the rows it was written after reading, each as
`model#sample` of the same question (`turn_ref`), `source_answer` the answer the source read from
the row (beside ours, `answer`). A row without a turn (an ordinary output of the same question)
has a null turn and seen. A folder without turns keeps the plain `COLUMNS`."""


def turn_ref(model: str, sample: int) -> str:
    """How `seen` names a row of the same question."""
    return f"{model}#{sample}"


class Price(BaseModel):
    """A model's public list price, cited, used where the source records no cost."""

    model_config = ConfigDict(extra="forbid")
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    source: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class SourceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    model: str
    note: str = ""


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo: str
    commit: str
    files: list[SourceFile]


class Split(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rule: str
    test_fraction: float = Field(gt=0, lt=1)


class RecipeFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    """Resolved, absolute."""
    model: str | None = None


class ImportRecipe(BaseModel):
    """How `consortium records import-file` made a folder, so that `consortium records reimport`
    makes it again in one command."""

    model_config = ConfigDict(extra="forbid")
    layout: str
    dataset: str
    kind: AnswerKind
    files: list[RecipeFile]
    map: dict[str, str] = Field(default_factory=dict)
    """The field map of layout `fields` (field -> path in a row)."""
    method: str = ""
    mbpp_tests: str | None = None
    repo: str = "unknown"
    commit: str = "unknown"
    licence: str = "not stated"
    limit: int | None = None
    letters: str | None = None
    """The choice letters declared (`--letters`); None: read from each question."""

    @model_serializer(mode="wrap")
    def _letters_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A recipe without declared letters is written as before (no `letters: null`)."""
        return _without_unset(handler(self), "letters")


class Sampling(BaseModel):
    """What every call of a `consortium record` run was sent with, beside the question: a resume
    must send the same (`records.recorder`)."""

    model_config = ConfigDict(extra="forbid")
    samples: int = Field(ge=1)
    """Samples per question and model."""
    seed: Literal["sample"] = "sample"
    """Sample k is sent with `seed=k`."""
    temperature: float | None = None
    """None: none sent, the endpoint's default."""
    top_p: float | None = None
    """None: none sent, the endpoint's default (`record` sends none)."""
    max_tokens: dict[str, int] = Field(default_factory=dict)
    """Per model, from the pool file."""


class Protocol(BaseModel):
    """The exchange a folder's turn rows recorded: who spoke, in which order, and when it stopped.
    `debate`: every speaker answers the question alone (turn 0, in `speakers` order); while their
    latest answers differ, one speaker a turn, in `speakers` order, answers again after reading
    every earlier turn, at most `max_rounds` such turns; then `final` says the answer."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["debate"]
    speakers: list[str] = Field(min_length=2)
    max_rounds: int = Field(ge=0)
    run: str
    """The recorded run, named (a source may hold several runs of the same exchange)."""
    final: str
    """How the answer is read when the speakers still disagree after `max_rounds` turns."""


class Manifest(BaseModel):
    """The header of a data set, readable without loading its rows."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int
    dataset: str
    answer_kind: AnswerKind
    sources: list[Source]
    licence: str
    grader: str
    split: Split
    prices: dict[str, Price] = Field(default_factory=dict)
    models: list[str]
    questions: int = Field(ge=0)
    notes: list[str] = Field(default_factory=list)
    """Declared choices and quirks of this import (estimates, fixed gold, dropped rows)."""
    created_by: str
    recipe: ImportRecipe | None = None
    """Set by `records import-file` (absent in older manifests and other imports)."""
    letters: str | None = None
    """The choice letters the import declared, which every reader of the folder grades with;
    None: each question's letters are read from its options (`consortium.tasks.choice`)."""
    sampling: Sampling | None = None
    """Set by `consortium record` (absent in older manifests and in imports)."""
    protocol: Protocol | None = None
    """Set when the rows hold the turns of a recorded exchange (`TURN_COLUMNS`)."""
    binds_tested_name: bool | None = None
    """True where the import graded MBPP-style programs with the tested function's name bound to
    the one the answer defined (RouterBench: its prompts name no function), so every later
    grader of the folder does the same; absent otherwise."""

    @model_serializer(mode="wrap")
    def _optional_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A manifest without a recipe, declared letters, sampling, a protocol or name binding
        is written as before."""
        return _without_unset(
            handler(self), "recipe", "letters", "sampling", "protocol", "binds_tested_name"
        )


def _without_unset(data: dict[str, Any], *names: str) -> dict[str, Any]:
    for name in names:
        if data.get(name) is None:
            data.pop(name, None)
    return data
