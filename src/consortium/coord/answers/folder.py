"""An answer-aware policy on disk: `policy.json` in a folder (kind, answer kind, the rule's
parameters, the prices it assumed, its figures, the records it was fitted on), read back as a
live coordinator by `ask`, `eval`, `serve` and `evolve` (`--policy FOLDER`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from consortium.coord.answers.kinds import RULE_KINDS, TURN_KINDS, check_rule, renamed, rule_from
from consortium.coord.answers.live import AnswerAwareCoordinator
from consortium.coord.answers.rules import Rule
from consortium.coord.answers.trinity_live import VERIFIERS, TrinityTeam
from consortium.coord.answers.trinity_turns import TrinityTurns, trinity_from
from consortium.core.errors import ConfigError
from consortium.records.schema import AnswerKind, Price

FOLDER_SCHEMA = 1
POLICY_FILE = "policy.json"


class Figures(BaseModel):
    """A policy on one split of its records: what the records runner measured."""

    model_config = ConfigDict(extra="forbid")
    questions: int
    accuracy: float
    usd_per_question: float
    calls_per_question: float


class FittedOn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    dataset: str
    outputs_sha256: str


class AnswerPolicy(BaseModel):
    """What `policy.json` holds for an answer-aware policy."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int
    kind: str
    name: str
    answer_kind: AnswerKind
    models: list[str]
    params: dict[str, Any]
    prices: dict[str, Price]
    train: Figures
    test: Figures
    records: list[FittedOn]
    selection: str
    """How the parameters were chosen, on the train split only."""
    created_by: str

    def rule(self) -> Rule | TrinityTurns:
        if self.kind in TURN_KINDS:
            return trinity_from(self.params, code=self.answer_kind == "code")
        return rule_from(self.kind, self.params)


def is_answer_policy(folder: Path) -> bool:
    """Whether `folder` holds an answer-aware policy (its policy.json names a rule kind)."""
    try:
        meta = json.loads((folder / POLICY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict):
        return False
    # the question-only TRINITY's folder also says kind "trinity", but has no schema_version
    return meta.get("kind") in RULE_KINDS or (
        meta.get("kind") in TURN_KINDS and "schema_version" in meta
    )


def write_policy(folder: Path, policy: AnswerPolicy) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / POLICY_FILE
    path.write_text(policy.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def read_policy(folder: Path) -> AnswerPolicy:
    """The folder's policy, checked: unreadable JSON, another schema version, a missing or
    mistyped field and parameters that build no rule are each one ConfigError line."""
    path = folder / POLICY_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{folder}: not a policy folder (no {POLICY_FILE})") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None
    version = meta.get("schema_version") if isinstance(meta, dict) else None
    if version != FOLDER_SCHEMA:
        raise ConfigError(
            f"{path}: policy folder schema {version!r}; this version reads schema "
            f"{FOLDER_SCHEMA} (train it again with `consortium train coordinator`)"
        )
    try:
        policy = AnswerPolicy.model_validate(meta)
        rule = policy.rule()
        if isinstance(rule, TrinityTurns):
            if policy.params.get("verifier", "re-solve") not in VERIFIERS:
                raise ValueError(f"verifier must be one of {', '.join(VERIFIERS)}")
        else:
            check_rule(rule)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
    except (KeyError, TypeError, ValueError) as error:
        kind = meta.get("kind")
        raise ConfigError(f"{path}: params do not build a {kind} rule ({error})") from None
    return policy


def load_answer_policy(
    folder: Path, names: Mapping[str, str] | None = None
) -> AnswerAwareCoordinator | TrinityTeam:
    """The folder's policy as a live coordinator; `names` renames its models to a pool's."""
    policy = read_policy(folder)
    params = renamed(policy.params, names or {})
    if policy.kind in TURN_KINDS:
        rule = trinity_from(params, code=policy.answer_kind == "code")
        verifier = str(params.get("verifier", "re-solve"))
        return TrinityTeam(rule, policy.answer_kind, policy.name, verifier)
    return AnswerAwareCoordinator(rule_from(policy.kind, params), policy.answer_kind, policy.name)
