"""The coordination report: per data set, every policy on the test split (accuracy with a paired
bootstrap 95 % interval against the best single model and against the weighted vote; $, calls
and tokens per question; $ as a share of the best single model's), the targets met or missed, and
an accuracy–cost frontier plot."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from consortium.coordinate.baselines import ceiling, cost_floor
from consortium.coordinate.code_checks import ExampleCoverage
from consortium.coordinate.pipeline import READING, DatasetResult
from consortium.coordinate.scorer import MATCHES_THE_VOTE
from consortium.coordinate.selection import TOLERANCE, paired_bootstrap
from consortium.coordinate.targets import judged
from consortium.coordinate.transcript_text import DIMS

DECLARED = (
    "Pool: replay of recorded outputs of real models (records folders, consortium.records), "
    "simulated in process. Roles on replay are declared simulations: a Worker gives the "
    "model's next recorded sample; a Verifier re-solves (its next recorded sample) and ACCEPTs "
    "exactly when its answer agrees with the current one; for code it runs the current program "
    "on its docstring examples in the sandbox (never the hidden tests), with no model call. "
    "Programs agree when they return the same on those examples and on probe calls made from "
    "them (one literal argument varied; consortium.coordinate.probes). Thinker has no replay "
    "simulation and is not in the action space. Answer rule: the most common Worker answer "
    "among those that pass their check (code: the docstring examples; otherwise: an answer is "
    "present), else among all (ties: the latest). Head features: declared structured "
    "transcript features only (agreement counts, answer present, check passed, turn, per-model "
    "answered/agrees/left); no language-model hidden state is read on replay. Split: sha256 of "
    "'dataset/question_id', 50/50 (consortium.records.split_of); everything is fitted or "
    "selected on train, reported on test. Cost: the records' cost_usd (recorded, or from the "
    "manifest's declared list prices). A question none of whose samples has a verdict (e.g. no "
    "reference) counts wrong for every policy when the source marks every recorded answer wrong, "
    "and is left out otherwise; so is a question only some of whose samples have one."
)
READING_DECLARED = (
    f"The ablation row '{READING}' differs in one thing: its head also reads {DIMS} whitened "
    "principal components of the static MiniLM feature (all-MiniLM-L6-v2-static) of the question "
    "and the Worker answers so far (consortium.coordinate.transcript_text)."
)


def dataset_summary(result: DatasetResult) -> dict[str, Any]:
    table = result.table
    test, train = table.indices("test"), table.indices("train")
    best = result.runs[result.best_single]
    vote = next(r for r in result.runs if r.name.startswith("weighted vote"))
    best_cost = float(best.cost[test].mean()) or 1.0
    best_train_cost = float(best.cost[train].mean()) or 1.0
    policies = []
    for run in result.runs:
        policies.append(
            {
                "name": run.name,
                "family": run.family,
                "note": run.note,
                "params": run.params,
                "accuracy": 100 * float(run.correct[test].mean()),
                "train_accuracy": 100 * float(run.correct[train].mean()),
                "train_cost_vs_best_single": float(run.cost[train].mean()) / best_train_cost,
                "vs_best_single": paired_bootstrap(run.correct[test], best.correct[test]).__dict__,
                "vs_weighted_vote": paired_bootstrap(
                    run.correct[test], vote.correct[test]
                ).__dict__,
                "usd_per_question": float(run.cost[test].mean()),
                "cost_vs_best_single": float(run.cost[test].mean()) / best_cost,
                "calls_per_question": float(run.calls[test].mean()),
                "tokens_per_question": float(run.tokens[test].mean()),
            }
        )
    single = float(best.correct[test].mean())
    right = max(0, math.ceil(len(test) * (single - TOLERANCE / 100) - 1e-9))
    floor = cost_floor(table, test, right)
    return {
        "dataset": table.dataset,
        "answer_kind": table.answer_kind,
        "models": list(table.models),
        "questions": table.n_questions,
        "ungraded_questions": table.ungraded,
        "verdicts": table.verdicts,
        "test_questions": len(test),
        "best_single": table.models[result.best_single],
        "best_single_accuracy": 100 * single,
        "cost_floor_vs_best_single": None if floor is None else floor / best_cost,
        "ceiling_accuracy": 100 * ceiling(table, test),
        "best_single_train_accuracy": 100 * float(best.correct[train].mean()),
        "cost_unit_usd": result.cost_unit,
        "policies": policies,
        "optimizers": result.optimizers,
        "frontier": [
            {
                "name": r.name,
                "accuracy": 100 * float(r.correct[test].mean()),
                "cost_vs_best_single": float(r.cost[test].mean()) / best_cost,
            }
            for r in result.frontier
        ],
    }


def target_lines(summary: Mapping[str, Any], target: float | None) -> list[str]:
    lines = []
    if target is not None:
        policies = [p for p in summary["policies"] if judged(p["name"])]
        lines += [_accuracy_line(target, p, "best single") for p in policies]
    if "ceiling_accuracy" in summary:
        lines.append(
            f"- ceiling: {summary['ceiling_accuracy']:.2f} % of the test questions have a right "
            "answer among all the recorded samples; no policy over this pool scores more"
        )
    lines += _cost_lines(summary)
    lines += _vote_match_lines(summary)
    return lines


def _accuracy_line(target: float, policy: Mapping[str, Any], against: str) -> str:
    interval = policy["vs_best_single"]
    why = []
    if policy["accuracy"] < target:
        why.append(f"short by {target - policy['accuracy']:.2f} pts")
    if interval["low"] <= 0:
        why.append("the CI is not above 0")
    gap = f" ({'; '.join(why)})" if why else ""
    met = not why
    return (
        f"- accuracy ≥ {target} with the CI above 0: {policy['name']} {policy['accuracy']:.2f}, "
        f"Δ vs {against} {_interval(interval)}: {'met' if met else 'missed'}{gap}"
    )


def group_lines(group: Mapping[str, Any]) -> list[str]:
    """A target on the mean over several data sets: its section of the report."""
    sets = ", ".join(
        f"{d} {a:.2f} ({m})"
        for d, a, m in zip(
            group["datasets"], group["best_single_per_set"], group["best_singles"], strict=True
        )
    )
    lines = [
        f"## {group['name']} ({', '.join(group['datasets'])})",
        "",
        "Every set weighs the same; the interval resamples each set's test questions on its own. "
        f"Best single per set (train-chosen): {sets}; their mean "
        f"{group['best_single_accuracy']:.2f}.",
        "",
    ]
    for p in group["policies"]:
        per_set = " / ".join(f"{a:.2f}" for a in p["per_set"])
        line = _accuracy_line(group["target"], p, "the best singles")
        lines.append(f"{line} (per set {per_set})")
    if group["not_on_every_set"]:
        names = ", ".join(group["not_on_every_set"])
        lines.append(f"- not judged, not run on every set: {names}")
    lines.append(
        f"- ceiling: {group['ceiling_accuracy']:.2f}, the mean of the sets' ceilings; no policy "
        "over this pool scores more"
    )
    return [*lines, ""]


def _cost_lines(summary: Mapping[str, Any]) -> list[str]:
    """The cost target, met by a policy within TOLERANCE of the best single model at ≤ 30 % of its
    $ on the test split *and* on the train split (a test figure alone is not counted: on a small
    split a policy the train split rules out can tie by luck)."""
    single, single_train = summary["best_single_accuracy"], summary["best_single_train_accuracy"]
    candidates = [p for p in summary["policies"] if p["family"] not in ("oracle", "single")]
    close = [p for p in candidates if p["accuracy"] >= single - TOLERANCE]
    on_test = [p for p in close if p["cost_vs_best_single"] <= 0.30]
    backed = [
        p
        for p in on_test
        if p["train_accuracy"] >= single_train - TOLERANCE
        and p["train_cost_vs_best_single"] <= 0.30
    ]
    head = f"- cost (within {TOLERANCE} pts at ≤ 30 % of the best single's $)"
    if backed:
        line = f"{head}: met by {_priced(backed)} (within it on the train split too)"
    else:
        dearer = [p for p in close if p not in on_test]
        cheapest = min(dearer, key=lambda p: p["cost_vs_best_single"]) if dearer else None
        line = f"{head}: missed"
        if cheapest is not None:
            line += (
                f"; the cheapest policy within {TOLERANCE} pts above 30 % is {cheapest['name']} "
                f"({cheapest['accuracy']:.2f}) at {100 * cheapest['cost_vs_best_single']:.1f} %"
            )
        line += _floor_text(summary.get("cost_floor_vs_best_single"))
    unbacked = [p for p in on_test if p not in backed]
    if unbacked:
        line += f"; on the test split only, not counted (outside it on train): {_priced(unbacked)}"
    return [line]


def _priced(policies: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(
        f"{p['name']} {p['accuracy']:.2f} at {100 * p['cost_vs_best_single']:.1f} %"
        for p in policies
    )


def _floor_text(floor: float | None) -> str:
    """What an oracle that pays only for the cheapest right answer needs (baselines.cost_floor)."""
    if floor is None:
        return ""
    verdict = (
        "so no policy over this pool can meet the target"
        if floor > 0.30
        else "so the pool allows it and no policy here finds it"
    )
    return (
        f"; the floor, an oracle paying only for the cheapest right answer on just enough "
        f"questions, is {100 * floor:.1f} % of the best single's $, {verdict}"
    )


def _vote_match_lines(summary: Mapping[str, Any]) -> list[str]:
    """The honest bar matched for less: the train-selected cascade against the weighted vote."""
    policies = summary["policies"]
    vote = next((p for p in policies if p["name"].startswith("weighted vote")), None)
    match = next((p for p in policies if p["note"] == MATCHES_THE_VOTE), None)
    if vote is None or match is None:
        return []
    share = match["usd_per_question"] / (vote["usd_per_question"] or 1.0)
    return [
        f"- the weighted vote matched for less: {match['name']} {match['accuracy']:.2f}, "
        f"Δ vs weighted vote {_interval(match['vs_weighted_vote'])}, at {100 * share:.1f} % of "
        f"the vote's $ ({100 * match['cost_vs_best_single']:.1f} % of the best single's)"
    ]


def _interval(d: Mapping[str, float]) -> str:
    return f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def _ungraded_text(ungraded: int) -> str:
    return f", {ungraded} more left out: not every sample has a verdict" if ungraded else ""


def _coverage_lines(summary: Mapping[str, Any]) -> list[str]:
    found = summary.get("docstring_examples")
    return [f"- {ExampleCoverage(**found).text()}"] if found else []


def _grade_warning_lines(summary: Mapping[str, Any]) -> list[str]:
    """Verdicts that disagree with the source's, said before any figure that rests on them."""
    return [f"- **{line}**" for line in summary.get("grade_warnings", [])]


def plot_name(out: Path, dataset: str) -> str:
    """A frontier plot's file name, beside the report and named after it (two reports in one
    folder, such as the optimizer table's, must not overwrite each other's plots)."""
    return f"{out.name}-{dataset}-frontier.png"


VERDICTS_DECLARED = {
    "ours": "Verdicts: ours, each records set's grader (named in its manifest).",
    "source": "Verdicts: the source's own (source_correct, as recorded where the outputs came "
    "from), not ours.",
}


def declared(summaries: Sequence[Mapping[str, Any]]) -> str:
    """What the report's figures rest on; the ablation's sentence only when its row was run."""
    kinds = sorted({s.get("verdicts", "ours") for s in summaries}) or ["ours"]
    text = " ".join([DECLARED, *(VERDICTS_DECLARED[kind] for kind in kinds)])
    if any(p["name"] == READING for s in summaries for p in s["policies"]):
        return f"{text} {READING_DECLARED}"
    return text


def markdown(
    summaries: Sequence[Mapping[str, Any]],
    targets: Mapping[str, float],
    stem: Path,
    groups: Sequence[Mapping[str, Any]] = (),
) -> str:
    out = ["# Answer-aware coordination on recorded outputs", "", declared(summaries)]
    out.append("")
    for s in summaries:
        out += [
            f"## {s['dataset']} ({s['test_questions']} test of {s['questions']} questions"
            f"{_ungraded_text(s.get('ungraded_questions', 0))}; best single on train: "
            f"{s['best_single']}, {s['best_single_accuracy']:.2f} on test)",
            "",
            *_grade_warning_lines(s),
            *target_lines(s, targets.get(s["dataset"])),
            *_coverage_lines(s),
            "",
            f"![frontier]({plot_name(stem, s['dataset'])})",
            "",
            "| policy | train acc % | acc % | Δ vs best single [95% CI] | "
            "Δ vs weighted vote [95% CI] | "
            "$ / q | $ vs best | calls / q | tokens / q | note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for p in s["policies"]:
            out.append(
                f"| {p['name']} | {p['train_accuracy']:.2f} | {p['accuracy']:.2f} | "
                f"{_interval(p['vs_best_single'])} | "
                f"{_interval(p['vs_weighted_vote'])} | {p['usd_per_question']:.5f} | "
                f"{100 * p['cost_vs_best_single']:.1f} % | {p['calls_per_question']:.2f} | "
                f"{p['tokens_per_question']:.0f} | {p['note']} |"
            )
        out.append("")
        if s.get("optimizers"):
            out += [
                "Optimizers (multi-turn, binary reward, λ = 0; test accuracy per seed):",
                "",
                "| optimizer | episodes | acc % mean ± sd | per seed | $ vs best single |",
                "|---|---|---|---|---|",
            ]
            for o in s["optimizers"]:
                seeds = ", ".join(f"{a:.2f}" for a in o["accuracy"])
                out.append(
                    f"| {o['optimizer']} | {o['episodes']} | {o['accuracy_mean']:.2f} ± "
                    f"{o['accuracy_sd']:.2f} | {seeds} | "
                    f"{100 * o['cost_vs_best_single_mean']:.1f} % |"
                )
            out.append("")
    for group in groups:
        out += group_lines(group)
    return "\n".join(out) + "\n"


def plot_frontier(summary: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = 1 + sum(p["family"] != "oracle" for p in summary["policies"])
    # the legend lists every policy: the figure grows with it instead of cutting it off
    fig, ax = plt.subplots(figsize=(10, max(4.8, 0.16 * entries)))
    family = summary["frontier"]
    ax.scatter(
        [f["cost_vs_best_single"] for f in family],
        [f["accuracy"] for f in family],
        s=8,
        c="lightgray",
        label="cascade configurations (not selected)",
    )
    markers = {"single": "s", "vote": "^", "cascade": "o", "learned": "D", "trinity": "*"}
    for p in summary["policies"]:
        if p["family"] == "oracle":
            continue
        iv = p["vs_best_single"]
        ax.errorbar(
            p["cost_vs_best_single"],
            p["accuracy"],
            yerr=[[iv["mean"] - iv["low"]], [iv["high"] - iv["mean"]]],
            fmt=markers.get(p["family"], "o"),
            ms=6,
            capsize=2,
            label=p["name"][:48],
        )
    ax.set_xscale("log")
    ax.set_xlabel("USD per question / the best single model's USD per question (test)")
    # the frontier sits near the best single model; weak single models fall below the frame
    ax.set_ylim(max(0.0, summary["best_single_accuracy"] - 12), 100)
    ax.set_ylabel("accuracy % (test; bars: paired 95% CI of Δ vs best single)")
    ax.set_title(f"{summary['dataset']}: accuracy vs cost")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(
    summaries: Sequence[Mapping[str, Any]],
    out: Path,
    targets: Mapping[str, float],
    groups: Sequence[Mapping[str, Any]] = (),
) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {"declared": declared(summaries), "datasets": list(summaries), "groups": groups}
    out.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(summaries, targets, out, groups), encoding="utf-8")
    for s in summaries:
        plot_frontier(s, out.parent / plot_name(out, s["dataset"]))
