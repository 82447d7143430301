"""Policy spec strings → coordinators: the one resolver `ask`, `eval` and `evolve` share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from consortium.coord.base import Coordinator
from consortium.core.errors import ConsortiumError, CoordinatorError
from consortium.pool.config import PoolConfig

POLICY_SPECS = (
    "single:NAME, random, conductor:NAME[:workers=a,b:recursion=1], "
    "workflow:single|vote|moa|debate|reflect[:models=a,b] or a trained policy directory"
)


def build_coordinator(spec: str | Path, config: PoolConfig, seed: int = 0) -> Coordinator:
    """`single:NAME`, `random`, `conductor:NAME…`, `workflow:KIND…` or a policy directory.
    Every spec the pool cannot satisfy is a `ConsortiumError` naming the spec."""
    try:
        return _build(str(spec), config, seed)
    except ValueError as error:  # a coordinator's constructor refusing its arguments
        raise CoordinatorError(f"policy {str(spec)!r}: {error}") from None


def _build(text: str, config: PoolConfig, seed: int) -> Coordinator:
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
    if Path(text).is_dir():
        from consortium.coord.answers.folder import (
            is_answer_policy,
            load_answer_policy,
            read_policy,
        )
        from consortium.coord.trinity.policy import load_policy

        if is_answer_policy(Path(text)):
            models = read_policy(Path(text)).rule().asks()
            names = {m: pool_name(config, m) for m in models}
            if len(set(names.values())) < len(names):
                raise ConsortiumError(
                    f"policy {text!r}: two of its models resolve to one pool model ({names})"
                )
            return load_answer_policy(Path(text), names)

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

    def __call__(self, config: PoolConfig) -> Coordinator:
        return build_coordinator(self.spec, config, self.seed)


def pool_name(config: PoolConfig, model: str) -> str:
    """The pool's name for a policy's model: the entry of that name, else the one entry that
    serves that endpoint model id (a records model `meta/llama-2-70b-chat` is the pool's
    `llama-2-70b-chat`); else UnknownModelError, one line naming the model."""
    if model in config.names:
        return model
    serving = [entry.name for entry in config.models if entry.model == model]
    if len(serving) == 1:
        return serving[0]
    return config.get(model).name  # raises, naming the model and the pool's
