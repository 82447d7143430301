"""Policy spec strings → coordinators: the one resolver `ask`, `eval`, `serve` and `evolve`
share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from consortium.coord.base import Coordinator
from consortium.coord.spec_forms import POLICY_SPECS
from consortium.coord.spec_values import pool_name
from consortium.core.errors import (
    ConfigError,
    ConsortiumError,
    CoordinatorError,
    UnknownModelError,
)
from consortium.pool.config import PoolConfig


def build_coordinator(
    spec: str | Path,
    config: PoolConfig,
    seed: int = 0,
    substitutes: Mapping[str, str] | None = None,
) -> Coordinator:
    """`single:NAME`, `random`, `conductor:NAME…`, `workflow:KIND…`, `debate:…`, a policy
    directory or an evolve folder (its final strategy). Every spec the pool cannot satisfy is a
    `ConsortiumError` naming the spec. `substitutes` (an answer-aware policy folder only) puts a
    pool model in place of a policy's model."""
    if substitutes and not is_answer_folder(str(spec)):
        raise ConfigError(
            f"--substitute: {spec} is an evolve folder; substitutes apply to an answer-aware "
            "policy folder"
            if (Path(spec) / "state.json").exists()
            else f"--substitute: policy {str(spec)!r} is not an answer-aware policy folder, the "
            "one kind whose models it replaces"
        )
    try:
        return _build(str(spec), config, seed, dict(substitutes or {}))
    except ValueError as error:  # a coordinator's constructor refusing its arguments
        raise CoordinatorError(f"policy {str(spec)!r}: {error}") from None


def is_answer_folder(spec: str) -> bool:
    from consortium.coord.answers.folder import is_answer_policy

    return Path(spec).is_dir() and is_answer_policy(Path(spec))


def parse_substitutes(given: Sequence[str]) -> dict[str, str]:
    """`--substitute OLD=NEW` options as a mapping; a malformed or repeated one is one line."""
    substitutes: dict[str, str] = {}
    for item in given:
        old, equals, new = (part.strip() for part in item.partition("="))
        if not equals or not old or not new:
            raise ConfigError(f"--substitute {item!r}: expected OLD=NEW (policy model=pool model)")
        if old in substitutes:
            raise ConfigError(f"--substitute: {old!r} is given twice")
        substitutes[old] = new
    return substitutes


def substitutes_per_policy(
    specs: Sequence[str | None], substitutes: Mapping[str, str]
) -> list[dict[str, str]]:
    """For a run of several policies (`eval`; None: one built in code): every substitute for
    each answer-aware policy folder, none for the other specs; given substitutes with no such
    folder among them are one line."""
    each = [dict(substitutes) if s is not None and is_answer_folder(s) else {} for s in specs]
    if substitutes and not any(each):
        raise ConfigError("--substitute: no --policy is an answer-aware policy folder")
    return each


def _build(text: str, config: PoolConfig, seed: int, substitutes: dict[str, str]) -> Coordinator:
    from consortium.coord.baselines import RandomRouter, SingleModel
    from consortium.coord.conductor.spec import conductor_from_spec, workflow_from_spec

    if text == "random":
        return RandomRouter(config.names, seed)
    if text.startswith("single:"):
        return SingleModel(config.get(text.removeprefix("single:")).name)
    if text.startswith("conductor:"):
        return conductor_from_spec(text, config)
    if text.startswith("workflow:"):
        return workflow_from_spec(text, config)
    if text == "debate" or text.startswith("debate:"):
        from consortium.coord.debate.spec import debate_from_spec

        return debate_from_spec(text, config)
    if Path(text).is_dir():
        from consortium.coord.strategy import StrategyCoordinator, evolved_strategy

        strategy = evolved_strategy(Path(text))
        if strategy is not None:
            return StrategyCoordinator(strategy, lambda spec: build_coordinator(spec, config, seed))
        from consortium.coord.answers.folder import (
            is_answer_policy,
            load_answer_policy,
            read_policy,
        )
        from consortium.coord.trinity.policy import load_policy

        if is_answer_policy(Path(text)):
            models = read_policy(Path(text)).rule().asks()
            names = _answer_models(text, models, config, substitutes)
            if len(set(names.values())) < len(names):
                raise ConsortiumError(
                    f"policy {text!r}: two of its models resolve to one pool model ({names})"
                )
            answering = load_answer_policy(Path(text), names)
            answering.substituted = {old: names[old] for old in substitutes}
            return answering

        coordinator = load_policy(Path(text))
        for name in coordinator.models:
            config.get(name)  # the policy's models must be in this pool
        return coordinator
    if "/" in text or text.startswith("."):
        nearby = sorted(p.name for p in Path(text).parent.glob("*/") if p.is_dir())
        raise ConsortiumError(
            f"policy {text!r}: no such policy directory"
            + (f" (in {Path(text).parent}: {', '.join(nearby)})" if nearby else "")
        )
    raise ConsortiumError(f"policy {text!r}: expected {POLICY_SPECS}")


@dataclass(frozen=True)
class SpecBuilder:
    """`build_coordinator(spec, config, seed)` as a picklable job part (for remote executors)."""

    spec: str
    seed: int = 0
    substitutes: tuple[tuple[str, str], ...] = ()

    def __call__(self, config: PoolConfig) -> Coordinator:
        return build_coordinator(self.spec, config, self.seed, dict(self.substitutes))


def _answer_models(
    text: str, models: Sequence[str], config: PoolConfig, substitutes: Mapping[str, str]
) -> dict[str, str]:
    """The pool's model for each of a policy's: its substitute, else the one `pool_name` finds.
    A substitute for a model the policy does not name, or naming one the pool lacks, and a
    policy model the pool lacks without a substitute are each one line."""
    for old, new in substitutes.items():
        if old not in models:
            raise ConfigError(
                f"--substitute {old}={new}: policy {text!r} names no model {old!r} "
                f"(it names {', '.join(models)})"
            )
    names = {}
    for model in models:
        given = substitutes.get(model)
        try:
            names[model] = pool_name(config, given or model)
        except UnknownModelError as error:
            if given is not None:
                raise ConfigError(f"--substitute {model}={given}: {error}") from None
            raise ConfigError(
                f"policy {text!r}: {error} (--substitute {model}=POOL_MODEL runs it with a pool "
                "model in its place)"
            ) from None
    return names
