"""The Markdown of reports/conductor-adaptive.md from the summary (`summary.summary_of`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from consortium.reports.conductor_adaptive.summary import BASELINES
from consortium.train.conductor.adaptive.families import counts_by_set
from consortium.train.conductor.measure import FIXED


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def shape_rows(test: dict[str, Any]) -> list[str]:
    shapes = sorted({s for found in test["table"].values() for s in found})
    if not shapes:
        return ["No valid workflow: no shapes to compare."]
    lines = [
        "| data set | " + " | ".join(shapes) + " |",
        "|---|" + "---|" * len(shapes),
    ]
    for name, found in sorted(test["table"].items()):
        lines.append(f"| {name} | " + " | ".join(str(found.get(s, 0)) for s in shapes) + " |")
    lines += [
        "",
        f"Chi-square {_p(test['statistic'])}, scipy p {_p(test['p_chi2'])}, permutation p "
        f"{_p(test['p_permutation'])}" + (f" ({test['note']})" if test["note"] else "") + ".",
    ]
    return lines


def reward_table(logs: dict[str, list[dict[str, Any]]], group: int, per_step: int) -> list[str]:
    """Mean reward of each batch against the rollouts spent so far, for every training run."""
    lines = [
        "| run | rollouts spent | mean reward of the batch | valid | right | $ per workflow |",
        "|---|---|---|---|---|---|",
    ]
    for name, rows in logs.items():
        for row in rows:
            spent = row.get("rollouts") or int(row["step"]) * group * per_step
            lines.append(
                f"| {name} | {spent} | {row.get('reward', 0):.3f} | {row.get('parsed', 0):.0%} | "
                f"{row.get('right', 0):.0%} | {row.get('cost', 0):.5f} |"
            )
    return lines


def trained(summary: dict[str, Any]) -> list[str]:
    return [k for k in summary["figures"] if k not in (*BASELINES, "base", "warm start")]


def target_lines(summary: dict[str, Any]) -> list[str]:
    """The two targets, checked from the figures: met or not, with the numbers."""
    if not trained(summary):
        return [
            "No trained conductor was evaluated on the test subset (`--evaluate`): both targets "
            "are **not met** here (unmeasured)."
        ]
    lines = []
    before = summary["shapes"].get("warm start", {}).get("p_permutation")
    where = "greedy on the test subset"
    if before is None:  # the warm start was not evaluated: its sampled shapes are the "before"
        before = summary.get("shapes_sampled_warm", {}).get("p_permutation")
        where = "sampled at temperature 1 on training questions"
    for label in trained(summary):
        after = summary["shapes"][label]["p_permutation"]
        met = after is not None and after < 0.01 and (before is None or before >= 0.01)
        lines.append(
            f"- Shapes differ between data sets after training at p < 0.01 and not before "
            f"({label}): **{'met' if met else 'not met'}** (permutation p after {_p(after)}, "
            f"after the warm start {_p(before)}, {where})."
        )
    figures = summary["figures"]
    for label in trained(summary):
        if label.endswith("λ=0"):  # the targets are for a cost-aware conductor
            continue
        good = []
        for name, row in figures[label].items():
            best = figures["best single"][name]
            diff, low, _ = summary["versus_best"][label][name]
            cheap = best["cost"] > 0 and row["cost"] <= 0.6 * best["cost"]
            if (diff >= -0.5 and cheap) or low > 0:
                good.append(name)
        lines.append(
            f"- {label} within 0.5 pts of the best single at ≤ 60 % of its cost, or above it "
            f"with CI > 0, on two of four sets: **{'met' if len(good) >= 2 else 'not met'}** "
            f"({', '.join(good) or 'no set'})."
        )
    return lines


def training_budget(settings: dict[str, Any]) -> str:
    """What each training method of the run was given."""
    methods = settings["methods"].split(",")
    parts = []
    if {"grpo", "rft"} & set(methods):
        min_p = settings.get("min_p") or 0
        parts.append(
            f"each GRPO or RFT conductor up to {settings['rollouts']} rollouts "
            f"({settings['questions_per_step']} questions x {settings['group_size']} workflows "
            f"per step or round, sampled at temperature {settings.get('temperature', 1.0):g}"
            + (f", min_p {min_p:g}" if min_p else "")
            + "; what each run spent is in the reward table below)"
        )
    if "distil" in methods:
        parts.append(
            f"the distilled conductor (DISTIL) {settings['distil_steps']} SFT steps x "
            f"{settings['sft_batch']} examples from the warm start on the workflow picked on "
            "train for each prompt's set (the `fixed, picked on train` row below), every worker "
            "shown"
            + (
                ", each step's model written by name (`--distil-ids names`), not by its number"
                if settings.get("distil_ids") == "names"
                else ""
            )
            + ": it learns from a search over fixed workflows, not from its own samples"
        )
    return "; ".join(parts)


def subset_sizes(summary: dict[str, Any]) -> str:
    """Each set's number of test questions, in brackets, when one set's test split is smaller
    than the subset asked for (HumanEval has 79)."""
    counts = {name: found["n"] for name, found in sorted(summary["figures"]["best single"].items())}
    if all(n == summary["settings"]["test_per_set"] for n in counts.values()):
        return ""
    return " (" + ", ".join(f"{name} {n}" for name, n in counts.items()) + ")"


def markdown(summary: dict[str, Any], command: str) -> str:
    lines = [
        *_intro(summary, command),
        *_sampled_shapes(summary),
        *_test_table(summary),
        *_targets_and_training(summary),
        *_examples(summary),
    ]
    return "\n".join(lines) + "\n"


def _intro(summary: dict[str, Any], command: str) -> list[str]:
    """The title, the pool, the data sets and the budget."""
    settings = summary["settings"]
    sets = summary["sets"]
    lines = [
        "# A Conductor that learns how big a team each task needs (mixed records pool)",
        "",
        f"Made by `{command}`.",
        "",
        "SmolLM2-135M-Instruct (the pinned GGUF, dequantized) conducts the recorded answers of "
        "real models: one records replay server serves GSM8K, MATH, HumanEval and DATE; each "
        "training question shows a random subset (at least 2) of its own data set's models, each "
        "test question all of them, in a random order; "
        + (
            "each worker line names its model (`--worker-notes names`). "
            if settings.get("worker_notes") == "names"
            else 'a worker line says only "Model k". '
        )
        + "Declared simulation: a step's answer is its model's recorded "
        "sample whatever it is told or shown, so a workflow's answer is its last model step's "
        "recorded answer unless a tool step (`vote`, `check`, `accept`) picks another; an "
        "`accept` that confirms an answer ends the workflow, and the steps after it are not run "
        "or paid for. The prompt has no "
        "example workflows (`examples=0`); the warm start teaches the format. Reward = gate x "
        "(1 right / 0.5 wrong − λ x $ / the set's best single model's mean $ on its train split). "
        "Everything ran on this machine's 2 shared CPU cores.",
        "",
        "| data set | models | best single (train) | its accuracy | its mean $ (the cost unit) |",
        "|---|---|---|---|---|",
    ]
    for name, info in sorted(sets.items()):
        lines.append(
            f"| {name} | {', '.join(info['roster'])} | {info['best_model']} | "
            f"{info['best_accuracy']:.1%} | {info['cost_unit']:.5f} |"
        )
    lines += [
        "",
        f"Budget: warm start {settings['sft_steps']} SFT steps x {settings['sft_batch']} "
        f"examples (lr {settings['sft_lr']}); {training_budget(settings)}, at λ = "
        f"{settings['lambdas']}. Test subset: "
        f"{settings['test_per_set']} questions per data set{subset_sizes(summary)} (greedy). "
        "The stages may run as "
        "separate invocations over one work folder (it resumes).",
        "",
    ]
    if summary.get("provenance"):
        lines += ["How this work folder was made (WORK/PROVENANCE.md):", ""]
        lines += [summary["provenance"], ""]
    return lines


def _sampled_shapes(summary: dict[str, Any]) -> list[str]:
    """The shapes the warm start samples at temperature 1."""
    lines: list[str] = [
        "## Shapes sampled after the warm start (temperature 1, training questions)",
        "",
    ]
    sampled = summary["sampled_warm"]
    scores = sampled["scores"]
    valid = [s for s in scores if s["valid"]]
    lines.append(
        f"{sampled['questions']} questions x {sampled['samples']} samples: {len(valid)}/"
        f"{len(scores)} valid."
    )
    for key, index in (("steps", 0), ("distinct workers", 1), ("tool steps", 2)):
        counts = Counter(s["shape"][index] for s in valid)
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        lines.append(f"- {key}: {shown or '—'}")
    lines += ["", *shape_rows(summary["shapes_sampled_warm"]), ""]
    return lines


def _test_table(summary: dict[str, Any]) -> list[str]:
    """Every conductor and baseline on the test subset, per data set."""
    sets = summary["sets"]
    lines: list[str] = [
        "## Test subset: accuracy, $ and calls per question",
        "",
        "Difference vs best single: accuracy points with a 95% paired bootstrap interval. "
        "Beside the conductors: the best single model and the vote over all of the set's models "
        "written as workflows; the fixed workflows mixture-of-agents (`moa`), `debate` and "
        "self-reflection (`reflect`) led by the set's best model, which on replay answer with "
        "their last step's recorded sample; and the served team, each set's committed policy "
        "folder `policies/<set>-team` (the answer-aware kind with the best train accuracy: "
        + ", ".join(f"{name} {kind}" for name, kind in sorted(summary["team_kinds"].items()))
        + ") run over the HTTP replay of its records on its whole test split, the subset's "
        "questions picked from it. `fixed, picked on train`: per set, of a family of fixed "
        "workflows (each model alone; each ordered pair of models, then `check`; each model "
        "three times, then `vote` or `check`; every model, then `vote`; the cascades: each "
        "ordered pair around an `accept`, and two answers (two models or one model twice), "
        "`accept`, a third model), the one with the best "
        "mean reward at the largest λ on the training questions, written by no conductor: "
        "what this pool and reward let one workflow per set reach ("
        + "; ".join(f"{name}: {pick}" for name, pick in sorted(summary["picked"].items()))
        + "). `stopped`: the share of workflows whose run stopped at a failed step (on "
        "replay: a model asked for a sample its records do not hold); a workflow an `accept` "
        "step ended early did not fail.",
        "",
        "| data set | conductor | valid | accuracy | $ per question | $ vs best single | calls "
        "| stopped | vs best single (pts, CI) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    figures = summary["figures"]
    stopped: list[str] = []
    for name in sorted(sets):
        best_cost = figures["best single"][name]["cost"] or 1.0
        for label, by_set in figures.items():
            f = by_set[name]
            diff, low, high = summary["versus_best"][label][name]
            if label in FIXED and f.get("stopped"):
                stopped.append(f"{label} on {name} ({f['stopped']:.0%})")
                continue
            lines.append(
                f"| {name} | {label} | {f['valid']:.0%} | {f['accuracy']:.0%} | "
                f"{f['cost']:.5f} | {f['cost'] / best_cost:.0%} | {f['calls']:.2f} | "
                f"{f.get('stopped', 0):.0%} | {diff:+.0f} ({low:+.0f}, {high:+.0f}) |"
            )
    if stopped:
        lines += [
            "",
            "Not shown, as replay cannot run them: fixed workflows that ask one model twice on "
            "sets whose records hold one sample of it per question (the second step has no "
            "recorded answer and stops the run): " + ", ".join(stopped) + ".",
        ]
    agrees = {k: v for k, v in summary.get("agrees_with_pick", {}).items() if k != "base"}
    if agrees:
        lines += [
            "",
            "Test workflows equal to the one picked on train (the same models, tools and access "
            "lists): " + counts_by_set(agrees),
        ]
    named = {
        label: by_set
        for label, by_set in summary.get("names_pick", {}).items()
        if any(n for n, _ in by_set.values())
    }
    if named:
        lines += [
            "",
            "Test workflows whose `<think>` line names the set's pick (the team, by model name, "
            "before a worker number is written): " + counts_by_set(named),
        ]
    return lines


def _targets_and_training(summary: dict[str, Any]) -> list[str]:
    """The targets, the greedy shapes per set and the reward per rollout."""
    settings = summary["settings"]
    lines: list[str] = ["", "## Targets", "", *target_lines(summary)]
    lines += ["", "## Workflow shapes per data set on the test subset (greedy)", ""]
    for label, test in summary["shapes"].items():
        lines += [f"### {label}", "", *shape_rows(test), ""]
    if summary["logs"]:
        lines += ["## Reward per rollout spent (GRPO and rejection-sampling fine-tuning)", ""]
        lines += reward_table(
            summary["logs"], settings["group_size"], settings["questions_per_step"]
        )
    timed = [row for rows in summary["logs"].values() for row in rows if "seconds" in row]
    if timed:
        per_rollout = sum(r["seconds"] for r in timed) / sum(
            r["rollouts"] - (r["round"] - 1) * r["rollouts"] / r["round"] for r in timed
        )
        lines += [
            "",
            f"Measured: {per_rollout:.0f} s per rollout (sampling, replay, fine-tuning; RFT "
            f"rounds on this shared machine), so 800 rollouts would take about "
            f"{800 * per_rollout / 3600:.1f} h per training run.",
        ]
    return lines


def _examples(summary: dict[str, Any]) -> list[str]:
    """Example workflows of each conductor but the base."""
    lines: list[str] = ["", "## Example workflows (greedy, test subset)", ""]
    for label, by_set in summary["examples"].items():
        if label == "base":
            continue
        for name, texts in sorted(by_set.items()):
            lines += [f"### {label} · {name}", ""]
            for text in texts[:10]:
                lines += ["```", text.strip(), "```"]
            lines.append("")
    return lines
