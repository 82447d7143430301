"""Every answer-aware rule kind by name: building one from a policy folder's params, renaming
its models to a pool's, listing the models it may ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consortium.coord.answers.kind_names import CHECKED_KINDS, RULE_KINDS, TURN_KINDS
from consortium.coord.answers.programs import ExampleFilter, FilterAndCluster
from consortium.coord.answers.rules import ModelSwitch, MotCascade, Rule, SingleAnswer, WeightedVote
from consortium.coord.answers.scored import ScorerCascade, ScorerPick

__all__ = ["CHECKED_KINDS", "RULE_KINDS", "TURN_KINDS", "check_rule", "renamed", "rule_from"]


def rule_from(kind: str, params: Mapping[str, Any]) -> Rule:
    """A rule from a policy folder's kind and params (KeyError / TypeError on a bad folder)."""
    given = params.get("weights", {})
    weights = {str(k): float(v) for k, v in given.items()} if isinstance(given, dict) else {}
    if kind == "single":
        return SingleAnswer(str(params["model"]))
    if kind == "vote":
        return WeightedVote(tuple(params["models"]), weights, int(params.get("samples", 1)))
    if kind == "model-switch":
        return ModelSwitch(tuple(params["order"]), weights, _limits(params["samples"]))
    if kind == "scorer":
        return ScorerPick(
            tuple(params["models"]), tuple(params["asked"]), tuple(map(float, params["weights"]))
        )
    if kind == "scorer-cascade":
        return ScorerCascade(
            tuple(params["models"]),
            tuple(params["order"]),
            float(params["threshold"]),
            tuple(tuple(map(float, w)) for w in params["scorers"]),
        )
    if kind == "mot-cascade":
        return MotCascade(
            tuple(params["cheap"]),
            str(params["strong"]),
            float(params["threshold"]),
            weights,
            _limits(params["samples"]),
        )
    if kind == "example-filter":
        return ExampleFilter(tuple(params["order"]), int(params["samples"]))
    if kind == "filter-and-cluster":
        return FilterAndCluster(tuple(params["models"]), weights, int(params["samples"]))
    raise KeyError(f"unknown rule kind {kind!r}")


def _limits(given: Any) -> dict[str, int]:
    if not isinstance(given, dict):
        raise TypeError("samples must map each model to how many samples it is asked for")
    return {str(model): int(count) for model, count in given.items()}


def check_rule(rule: Rule) -> None:
    """Refuse a rule that cannot run as its kind means (ValueError, one line): nothing to ask,
    a model asked twice in one order, a sample count below 1, a strong model among the cheap
    ones, scorer weights that do not fit the models, a cascade without a scorer per stage."""
    params = rule.params()
    asks = rule.asks()
    if not asks:
        raise ValueError("it asks no model")
    for key in ("models", "asked", "order", "cheap"):
        listed = list(params.get(key, []))
        if len(set(listed)) != len(listed):
            raise ValueError(f"{key} names a model twice")
    if params.get("strong") in params.get("cheap", []):
        raise ValueError("the strong model is also a cheap one")
    counts = params.get("samples", 1)
    if any(int(c) < 1 for c in (counts.values() if isinstance(counts, dict) else [counts])):
        raise ValueError("every sample count must be at least 1")
    features = 3 * len(params.get("models", [])) + 5
    if rule.kind == "scorer" and len(params["weights"]) != features:
        raise ValueError(f"the scorer has {len(params['weights'])} weights, not {features}")
    if rule.kind == "scorer-cascade":
        if len(params["scorers"]) != len(params["order"]):
            raise ValueError("a scorer-cascade needs one scorer per stage")
        if any(len(w) != features for w in params["scorers"]):
            raise ValueError(f"every stage's scorer needs {features} weights")


def renamed(params: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A rule's params with its models renamed (a records model id -> the pool's name)."""
    out = dict(params)
    for key in ("model", "strong"):
        if key in out:
            out[key] = names.get(str(out[key]), out[key])
    for key in ("models", "asked", "order", "cheap"):
        if key in out:
            out[key] = [names.get(str(m), m) for m in out[key]]
    for key in ("weights", "samples"):
        if isinstance(out.get(key), dict):
            out[key] = {names.get(str(m), m): w for m, w in dict(out[key]).items()}
    return out
