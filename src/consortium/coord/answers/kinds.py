"""Every answer-aware rule kind by name: building one from a policy folder's params, renaming
its models to a pool's, listing the models it may ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consortium.coord.answers.rules import ModelSwitch, MotCascade, Rule, SingleAnswer, WeightedVote
from consortium.coord.answers.scored import ScorerCascade, ScorerPick


def rule_from(kind: str, params: Mapping[str, Any]) -> Rule:
    """A rule from a policy folder's kind and params (KeyError / TypeError on a bad folder)."""
    given = params.get("weights", {})
    weights = {str(k): float(v) for k, v in given.items()} if isinstance(given, dict) else {}
    if kind == "single":
        return SingleAnswer(str(params["model"]))
    if kind == "vote":
        return WeightedVote(tuple(params["models"]), weights, int(params.get("samples", 1)))
    if kind == "model-switch":
        return ModelSwitch(tuple(params["order"]), weights, int(params["samples"]))
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
            int(params["samples"]),
        )
    raise KeyError(f"unknown rule kind {kind!r}")


RULE_KINDS = ("single", "vote", "model-switch", "mot-cascade", "scorer", "scorer-cascade")


def renamed(params: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A rule's params with its models renamed (a records model id -> the pool's name)."""
    out = dict(params)
    for key in ("model", "strong"):
        if key in out:
            out[key] = names.get(str(out[key]), out[key])
    for key in ("models", "asked", "order", "cheap"):
        if key in out:
            out[key] = [names.get(str(m), m) for m in out[key]]
    if isinstance(out.get("weights"), dict):
        out["weights"] = {names.get(str(m), m): w for m, w in dict(out["weights"]).items()}
    return out
