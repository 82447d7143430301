"""`--kind auto`: every answer-aware kind that fits a records folder, fitted on its train split,
and the one with the best train accuracy kept (ties: `selection.choose`, the cheaper in the run's
cost measure, then the simpler). The test split plays no part in the choice, so the kept policy's
test figure is an honest estimate."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from consortium.coord.answers.folder import AnswerPolicy
from consortium.coord.answers.kind_names import (
    AUTO,
    CHECKED_KINDS,
    FITTED_KINDS,
    RULE_KINDS,
    check_kind,
)
from consortium.core.costs import CostMeasure
from consortium.core.errors import ConfigError
from consortium.evaluation.recorded.cost_measure import figure_label
from consortium.evaluation.recorded.selection import Standing, choose, tie_text
from consortium.records.store import load_records
from consortium.train.answers.policy import FittedPolicy, fit_answer_policy

__all__ = ["AUTO", "candidate_kinds", "fit_best_kind", "fit_kind"]


def candidate_kinds(answer_kind: str) -> tuple[str, ...]:
    """The kinds `auto` tries: every rule kind that applies to the records' answer kind. TRINITY
    is left out: its head trains for minutes, the rules in seconds."""
    return tuple(k for k in RULE_KINDS if answer_kind == "code" or k not in CHECKED_KINDS)


def fit_kind(
    kind: str,
    records_folder: Path,
    *,
    lam: float = 0.0,
    cost: CostMeasure = "usd",
    stop: str = "accept",
    created_by: str = "consortium",
    cache_dir: Path | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> AnswerPolicy:
    """What `train coordinator --kind` fits: `auto` (`fit_best_kind`) or the one kind named
    (`fit_answer_policy`); a kind it does not take is one line naming every one, auto included."""
    check_kind(kind, FITTED_KINDS)
    if kind != AUTO:
        return fit_answer_policy(
            kind, records_folder, lam=lam, created_by=created_by, cost=cost, stop=stop,
            cache_dir=cache_dir,
        ).policy  # fmt: skip
    if stop != "accept":
        raise ConfigError(f"--stop applies to --kind trinity only, not {kind}")
    return fit_best_kind(
        records_folder, lam=lam, cost=cost, created_by=created_by, cache_dir=cache_dir, say=say
    )


def fit_best_kind(
    records_folder: Path,
    *,
    lam: float = 0.0,
    cost: CostMeasure = "usd",
    created_by: str = "consortium",
    cache_dir: Path | None = None,
    say: Callable[[str], None] = lambda line: None,
    fit_on: Collection[str] | None = None,
) -> AnswerPolicy:
    """The best of every applicable kind by train accuracy (ties: `selection.choose`, with cost
    in `cost`), its selection naming each candidate's train figure and the kinds that tied.
    `fit_on`: the ids of the questions each kind is fitted and chosen on (None: the train split)."""
    answer_kind = load_records(records_folder).manifest.answer_kind
    fitted: list[FittedPolicy] = []
    skipped: list[str] = []
    for kind in candidate_kinds(answer_kind):
        try:
            one = fit_answer_policy(
                kind, records_folder, lam=lam, cost=cost, created_by=created_by,
                cache_dir=cache_dir, fit_on=fit_on,
            )  # fmt: skip
        except ConfigError as error:  # a kind this pool cannot form (e.g. no cheaper model)
            skipped.append(f"{kind} ({error})")
            say(f"{kind}: left out: {error}")
            continue
        say(f"{kind}: train {_figures(one.train, cost)}")
        fitted.append(one)
    if not fitted:
        raise ConfigError(f"{records_folder}: no answer-aware kind fits: {'; '.join(skipped)}")
    standings = [one.train for one in fitted]
    choice = choose(standings)
    best = fitted[choice.kept].policy
    tried = ", ".join(f"{p.kind} {p.train.accuracy:.2f}" for p in (one.policy for one in fitted))
    tied = tie_text(standings, choice, "kinds", best.train.questions)
    selection = (
        f"auto: the kind with the best train accuracy, ties to the cheaper on train "
        f"({figure_label(cost)}), then the simpler "
        f"(tried {tried}{'; left out ' + '; '.join(skipped) if skipped else ''}); "
        f"{tied + '; ' if tied else ''}{best.kind}: {best.selection}"
    )
    dataset = best.name.split(":", 1)[1]
    return best.model_copy(update={"selection": selection, "name": f"auto-{best.kind}:{dataset}"})


def _figures(train: Standing, cost: CostMeasure) -> str:
    """A kind's train accuracy, cost in the run's measure and calls, for the progress line."""
    spent = f"${train.cost:.5f}" if cost == "usd" else f"{train.cost:.4g} {figure_label(cost)}"
    return f"{100 * train.accuracy:.2f} %, {spent} and {train.calls:.2f} calls a question"
