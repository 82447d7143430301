"""`--policy` specs of the workflow coordinators.

- `conductor:NAME[:workers=a,b][:recursion=1][:max_depth=1][:max_calls=3][:max_steps=5]
  [:fallback=MODEL]`: pool model NAME writes the workflows; the workers are the other pool
  models unless `workers` lists them.
- `workflow:KIND[:models=a,b,c]`: a baseline workflow (single, vote, moa, debate, reflect) over
  the pool's models (all, in pool order, by default); the first model aggregates, judges or
  reflects.
"""

from __future__ import annotations

from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import TEMPLATES, WorkflowCoordinator, template
from consortium.core.errors import ConfigError
from consortium.pool.config import PoolConfig

CONDUCTOR_KEYS = {"workers", "recursion", "max_depth", "max_calls", "max_steps", "fallback"}


def _options(text: str, parts: list[str], allowed: set[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in allowed:
            raise ConfigError(
                f"--policy {text!r}: {part!r} is not one of "
                f"{', '.join(f'{k}=…' for k in sorted(allowed))}"
            )
        options[key] = value
    return options


def _int(text: str, options: dict[str, str], key: str, default: int) -> int:
    try:
        return int(options.get(key, default))
    except ValueError:
        raise ConfigError(f"--policy {text!r}: {key} must be an integer") from None


def _models(config: PoolConfig, value: str | None, default: list[str]) -> list[str]:
    if value is None:
        return default
    names = [name for name in value.split(",") if name]
    for name in names:
        config.get(name)  # UnknownModelError lists the pool
    return names


def conductor_from_spec(text: str, config: PoolConfig) -> ConductorCoordinator:
    _, name, *rest = text.split(":")
    conductor = config.get(name).name
    options = _options(text, rest, CONDUCTOR_KEYS)
    workers = _models(config, options.get("workers"), [n for n in config.names if n != conductor])
    if not workers:
        raise ConfigError(f"--policy {text!r}: the pool has no workers besides the conductor")
    fallback = options.get("fallback")
    if fallback is not None:
        config.get(fallback)
    return ConductorCoordinator(
        conductor,
        workers,
        strengths={m.name: m.strengths for m in config.models},
        max_steps=_int(text, options, "max_steps", 5),
        recursion=_int(text, options, "recursion", 0) > 0,
        max_depth=_int(text, options, "max_depth", 1),
        max_conductor_calls=_int(text, options, "max_calls", 3),
        fallback=fallback,
        name=text,
    )


def workflow_from_spec(text: str, config: PoolConfig) -> WorkflowCoordinator:
    _, kind, *rest = text.split(":")
    if kind not in TEMPLATES:
        raise ConfigError(f"--policy {text!r}: unknown workflow {kind!r}; known: {TEMPLATES}")
    options = _options(text, rest, {"models"})
    models = _models(config, options.get("models"), config.names)
    return WorkflowCoordinator(template(kind, models), text)
