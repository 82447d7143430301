"""`--policy` specs of the workflow coordinators.

- `conductor:NAME[:workers=a,b][:recursion=1][:max_depth=1][:max_calls=3][:max_steps=5]
  [:fallback=MODEL][:answers=KIND][:tools=FOLDER][:examples=0]`: pool model NAME writes the
  workflows (`examples=0`: its prompt without the example workflows, as it was trained); the
  workers are the other pool models unless `workers` lists them. Its tool steps read answers as
  `answers` says (number, latex, choice, date, code, text; default: each task's own kind);
  `tools` names a trained answer policy folder whose per-model weights weigh the vote and whose
  scorer (a `scorer` policy) makes the `select` tool available.
- `workflow:KIND[:models=a,b,c]`: a baseline workflow (single, judge-vote, moa, debate,
  reflect) over the pool's models (all, in pool order, by default); the first model aggregates,
  judges or reflects.
"""

from __future__ import annotations

from pathlib import Path

from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import TEMPLATES, WorkflowCoordinator, template
from consortium.coord.conductor.tools import AnswerTools, Scorer
from consortium.coord.spec_forms import CONDUCTOR_OPTIONS
from consortium.core.errors import ConfigError, UnknownModelError
from consortium.pool.config import PoolConfig
from consortium.records.schema import AnswerKind, answer_kind_named

CONDUCTOR_KEYS = set(CONDUCTOR_OPTIONS)


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


def answer_kind(given: str | None, where: str) -> AnswerKind | None:
    """The answer kind `given` names (None: the task's own); one line naming `where` when it is
    not one."""
    return None if given is None else answer_kind_named(given, where)


def answer_tools(text: str, options: dict[str, str], config: PoolConfig) -> AnswerTools:
    """The tool steps' settings from `answers=KIND` and `tools=FOLDER`. The folder's models are
    renamed to the pool's where the pool serves them; one it does not serve keeps its name (no
    step of this pool is that model: its weight and scorer columns stay unused)."""
    from consortium.coord.answers.folder import read_policy
    from consortium.coord.registry import pool_name

    def pooled(model: str) -> str:
        try:
            return pool_name(config, model)
        except UnknownModelError:
            return model

    kind = answer_kind(options.get("answers"), f"--policy {text!r}: answers")
    folder = options.get("tools")
    if folder is None:
        return AnswerTools(kind)
    policy = read_policy(Path(folder))
    weights: dict[str, float] = {}
    given_weights = policy.params.get("weights")
    if isinstance(given_weights, dict):
        weights = {pooled(str(m)): float(w) for m, w in given_weights.items()}
    scorer = None
    if policy.kind == "scorer":
        models = tuple(pooled(str(m)) for m in policy.params["models"])
        scorer = Scorer(models, tuple(float(w) for w in policy.params["weights"]))
    return AnswerTools(kind or policy.answer_kind, weights, scorer)


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
        executor=WorkflowExecutor(tools=answer_tools(text, options, config)),
        name=text,
        examples=_int(text, options, "examples", 1) > 0,
    )


def workflow_from_spec(text: str, config: PoolConfig) -> WorkflowCoordinator:
    _, kind, *rest = text.split(":")
    if kind not in TEMPLATES:
        raise ConfigError(f"--policy {text!r}: unknown workflow {kind!r}; known: {TEMPLATES}")
    options = _options(text, rest, {"models"})
    models = _models(config, options.get("models"), config.names)
    return WorkflowCoordinator(template(kind, models), text)
