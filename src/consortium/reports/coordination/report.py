"""The coordination report: per data set, every policy on the test split (accuracy with a paired
bootstrap 95 % interval against the best single model and against the weighted vote; $, calls
and tokens per question; $ as a share of the best single model's), the targets met or missed, and
an accuracy–cost frontier plot. Cost is in the run's measure (dollars, tokens or seconds:
`cost_measure`); families left out and selections the train split cannot make are said."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from consortium.core.costs import unit
from consortium.evaluation.recorded.baselines import ceiling, cost_floor
from consortium.evaluation.recorded.selection import TOLERANCE, paired_bootstrap
from consortium.evaluation.recorded.transcript_text import DIMS
from consortium.reports.coordination.cost_lines import (
    cost_label,
    cost_lines,
    cost_text,
    interval_text,
    vote_match_lines,
)
from consortium.reports.coordination.pipeline import READING, TRINITY_DECLARED, DatasetResult
from consortium.reports.coordination.targets import judged
from consortium.tasks.code_checks import ExampleCoverage

DECLARED = (
    "Pool: replay of recorded outputs of real models (records folders, consortium.records), "
    "simulated in process. Roles on replay are declared simulations: a Worker gives the "
    "model's next recorded sample; a Verifier re-solves (its next recorded sample) and ACCEPTs "
    "exactly when its answer agrees with the current one; for code it runs the current program "
    "on its docstring examples in the sandbox (never the hidden tests), with no model call. "
    "Programs agree when they return the same on those examples and on probe calls made from "
    "them (one literal argument varied; consortium.tasks.probes). Thinker has no replay "
    "simulation and is not in the action space. Answer rule: the most common Worker answer "
    "among those that pass their check (code: the docstring examples; otherwise: an answer is "
    "present), else among all (ties: the latest). Head features: declared structured "
    "transcript features only (agreement counts, answer present, check passed, turn, per-model "
    "answered/agrees/left); no language-model hidden state is read on replay. Split: sha256 of "
    "'dataset/question_id', 50/50 (consortium.records.split_of); everything is fitted or "
    "selected on train, reported on test. A question none of whose samples has a verdict (e.g. no "
    "reference) counts wrong for every policy when the source marks every recorded answer wrong, "
    "and is left out otherwise; so is a question only some of whose samples have one. Calls "
    "count every call a policy makes, one that asks past a model's last recorded sample for the "
    "question included (the records replay answers it with an error: no answer, $0, no tokens), "
    "as the served policy makes it."
)
COST_DECLARED = {
    "usd": "Cost: dollars, the records' cost_usd (recorded, or from the manifest's declared list "
    "prices).",
    "tokens": "Cost: tokens (--cost tokens), each sample's tokens_in + tokens_out as recorded, "
    "not dollars.",
    "seconds": "Cost: seconds (--cost seconds), each sample's recorded wall time (latency_s), "
    "summed over the calls a policy makes, not dollars.",
}
READING_DECLARED = (
    f"The ablation row '{READING}' differs in one thing: its head also reads {DIMS} whitened "
    "principal components of the static MiniLM feature (all-MiniLM-L6-v2-static) of the question "
    "and the Worker answers so far (consortium.evaluation.recorded.transcript_text)."
)


def dataset_summary(result: DatasetResult) -> dict[str, Any]:
    table = result.table
    test, train = table.indices("test"), table.indices("train")
    best = result.runs[result.best_single]
    vote = next(r for r in result.runs if r.name.startswith("weighted vote"))
    best_raw_cost = float(best.cost[test].mean())
    best_cost = best_raw_cost or 1.0
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
                "cost_per_question": float(run.cost[test].mean()),
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
        "best_single_untold": result.singles_untold,
        "best_single_accuracy": 100 * single,
        "best_single_cost_per_question": best_raw_cost,
        "cost_floor_vs_best_single": None if floor is None else floor / best_cost,
        "ceiling_accuracy": 100 * ceiling(table, test),
        "best_single_train_accuracy": 100 * float(best.correct[train].mean()),
        "cost_measure": result.measure,
        "cost_unit": result.cost_unit,
        "selection_notes": list(result.notes),
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
    lines += cost_lines(summary)
    lines += vote_match_lines(summary)
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
        f"Δ vs {against} {interval_text(interval)}: {'met' if met else 'missed'}{gap}"
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


def _ungraded_text(ungraded: int) -> str:
    return f", {ungraded} more left out: not every sample has a verdict" if ungraded else ""


def _coverage_lines(summary: Mapping[str, Any]) -> list[str]:
    found = summary.get("docstring_examples")
    return [f"- {ExampleCoverage(**found).text()}"] if found else []


def _selection_lines(summary: Mapping[str, Any]) -> list[str]:
    """Families left out on this pool and selections the train split cannot make."""
    return [f"- {line}" for line in summary.get("selection_notes", [])]


def _best_single_text(summary: Mapping[str, Any]) -> str:
    if summary.get("best_single_untold"):
        return (
            f"no best single on train (all tie), {summary['best_single']} is the reference, "
            f"{summary['best_single_accuracy']:.2f} on test"
        )
    return (
        f"best single on train: {summary['best_single']}, "
        f"{summary['best_single_accuracy']:.2f} on test"
    )


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
    measures = sorted({s.get("cost_measure", "usd") for s in summaries}) or ["usd"]
    text = " ".join(
        [
            DECLARED,
            *(COST_DECLARED[measure] for measure in measures),
            *(VERDICTS_DECLARED[kind] for kind in kinds),
        ]
    )
    if any(p["name"].startswith("TRINITY") for s in summaries for p in s["policies"]):
        text = f"{text} {TRINITY_DECLARED}"
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
        label = cost_label(s)
        cost_heads = (
            f"{label} / q | {label} vs best"
            if label == "$"
            else f"cost ({label}) / q | cost vs best"
        )
        out += [
            f"## {s['dataset']} ({s['test_questions']} test of {s['questions']} questions"
            f"{_ungraded_text(s.get('ungraded_questions', 0))}; {_best_single_text(s)})",
            "",
            *_grade_warning_lines(s),
            *_selection_lines(s),
            *target_lines(s, targets.get(s["dataset"])),
            *_coverage_lines(s),
            "",
            f"![frontier]({plot_name(stem, s['dataset'])})",
            "",
            "| policy | train acc % | acc % | Δ vs best single [95% CI] | "
            f"Δ vs weighted vote [95% CI] | {cost_heads} | calls / q | tokens / q | note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for p in s["policies"]:
            out.append(
                f"| {p['name']} | {p['train_accuracy']:.2f} | {p['accuracy']:.2f} | "
                f"{interval_text(p['vs_best_single'])} | "
                f"{interval_text(p['vs_weighted_vote'])} | "
                f"{cost_text(p['cost_per_question'], label)} | "
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
    shares = [f["cost_vs_best_single"] for f in family]
    shares += [p["cost_vs_best_single"] for p in summary["policies"]]
    if any(share > 0 for share in shares):  # every cost 0 (prices of 0, in dollars): linear
        ax.set_xscale("log")
    cost = unit(summary.get("cost_measure", "usd"))
    ax.set_xlabel(f"{cost} per question / the best single model's {cost} per question (test)")
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
    document = {
        "declared": declared(summaries),
        "cost_measure": sorted({s.get("cost_measure", "usd") for s in summaries}),
        "datasets": list(summaries),
        "groups": groups,
    }
    out.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(summaries, targets, out, groups), encoding="utf-8")
    for s in summaries:
        plot_frontier(s, out.parent / plot_name(out, s["dataset"]))
