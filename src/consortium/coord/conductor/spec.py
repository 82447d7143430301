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
from consortium.coord.spec_values import (
    answer_kind,
    int_option,
    pool_models,
    pool_name,
    spec_options,
)
from consortium.core.errors import ConfigError, UnknownModelError
from consortium.pool.config import PoolConfig

CONDUCTOR_KEYS = set(CONDUCTOR_OPTIONS)


def answer_tools(text: str, options: dict[str, str], config: PoolConfig) -> AnswerTools:
    """The tool steps' settings from `answers=KIND` and `tools=FOLDER`. The folder's models are
    renamed to the pool's where the pool serves them; one it does not serve keeps its name (no
    step of this pool is that model: its weight and scorer columns stay unused)."""
    from consortium.coord.answers.folder import read_policy

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
    options = spec_options(text, rest, CONDUCTOR_KEYS)
    others = [n for n in config.names if n != conductor]
    workers = pool_models(config, options.get("workers"), others)
    if not workers:
        raise ConfigError(f"--policy {text!r}: the pool has no workers besides the conductor")
    fallback = options.get("fallback")
    if fallback is not None:
        config.get(fallback)
    return ConductorCoordinator(
        conductor,
        workers,
        strengths={m.name: m.strengths for m in config.models},
        max_steps=int_option(text, options, "max_steps", 5),
        recursion=int_option(text, options, "recursion", 0) > 0,
        max_depth=int_option(text, options, "max_depth", 1),
        max_conductor_calls=int_option(text, options, "max_calls", 3),
        fallback=fallback,
        executor=WorkflowExecutor(tools=answer_tools(text, options, config)),
        name=text,
        examples=int_option(text, options, "examples", 1) > 0,
    )


def workflow_from_spec(text: str, config: PoolConfig) -> WorkflowCoordinator:
    _, kind, *rest = text.split(":")
    if kind not in TEMPLATES:
        raise ConfigError(f"--policy {text!r}: unknown workflow {kind!r}; known: {TEMPLATES}")
    options = spec_options(text, rest, {"models"})
    models = pool_models(config, options.get("models"), config.names)
    return WorkflowCoordinator(template(kind, models), text)
