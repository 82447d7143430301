"""The learned rule of when to talk: once the first answers differ, features of the question and
of the first answers' texts → the probability that debating on ends right where taking the
stronger model's first answer (`lead`, the stronger on train) would not (logistic;
fitted on the train split of the disputed questions by `consortium debates fit-gate`). It talks
when that probability is above `threshold`. The same function of the texts live and on the
records: it reads only what the policy has (`transcript.Spoken`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from consortium.coord.answers.scoring import probabilities
from consortium.coord.debate.transcript import Spoken
from consortium.core.errors import ConfigError
from consortium.records.grading import grade_text
from consortium.records.schema import AnswerKind

GATE_FILE = "gate.json"
LETTERS = "ABCDE"
_HEDGES = re.compile(
    r"\b(neither|both|not|however|although|but|may|might|could|unclear|depends|possibl\w*)\b",
    re.IGNORECASE,
)


def feature_names(speakers: Sequence[str]) -> list[str]:
    names = ["question words (log)"]
    for speaker in speakers:
        names += [f"{speaker}: {letter}" for letter in (*LETTERS, "no answer")]
        names += [f"{speaker}: words (log)", f"{speaker}: hedges per word"]
    return [*names, "constant"]


def gate_features(
    question: str, first: Sequence[Spoken], speakers: Sequence[str], kind: AnswerKind
) -> np.ndarray:
    """The features of one question's first answers (`feature_names`)."""
    by_speaker = {spoken.speaker: spoken.text for spoken in first}
    row = [math.log1p(len(question.split()))]
    for speaker in speakers:
        text = by_speaker.get(speaker, "")
        answer = grade_text(kind, None, text, question=question).answer if text else None
        row += [1.0 if answer == letter else 0.0 for letter in LETTERS]
        row.append(1.0 if answer is None or answer not in LETTERS else 0.0)
        words = max(1, len(text.split()))
        row += [math.log1p(words), len(_HEDGES.findall(text)) / words]
    return np.array([*row, 1.0])


@dataclass(frozen=True)
class TalkGate:
    speakers: tuple[str, ...]
    lead: str
    """The stronger model on train: where the rule does not talk, its first answer is taken."""
    kind: AnswerKind
    weights: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    """Each feature is standardised by the train split's mean and scale before the weights."""
    threshold: float = 0.5

    def probability(self, question: str, first: Sequence[Spoken]) -> float:
        x = gate_features(question, first, self.speakers, self.kind)
        z = (x - np.array(self.mean)) / np.array(self.scale)
        return float(probabilities(z[None, :], np.array(self.weights))[0])

    def talks(self, question: str, first: list[Spoken]) -> bool:
        return self.probability(question, first) > self.threshold


class _GateFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    speakers: list[str]
    lead: str
    kind: AnswerKind
    weights: list[float]
    mean: list[float]
    scale: list[float]
    threshold: float = 0.5
    features: list[str]
    fitted_on: str = ""
    figures: dict[str, float] = {}


def write_gate(folder: Path, gate: TalkGate, fitted_on: str, figures: dict[str, float]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        **asdict(gate),
        "features": feature_names(gate.speakers),
        "fitted_on": fitted_on,
        "figures": figures,
    }
    path = folder / GATE_FILE
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def read_gate(folder: Path) -> TalkGate:
    """A fitted rule of when to talk; one line when the folder holds none or a broken one."""
    path = folder / GATE_FILE
    if not path.is_file():
        raise ConfigError(f"{folder}: no {GATE_FILE} (fit one with consortium debates fit-gate)")
    try:
        data = _GateFile.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
    width = len(feature_names(data.speakers))
    if not len(data.weights) == len(data.mean) == len(data.scale) == width:
        raise ConfigError(f"{path}: {width} features expected for {len(data.speakers)} speakers")
    return TalkGate(
        tuple(data.speakers),
        data.lead,
        data.kind,
        tuple(data.weights),
        tuple(data.mean),
        tuple(data.scale),
        data.threshold,
    )
