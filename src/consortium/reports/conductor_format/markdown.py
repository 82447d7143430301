"""The conductor-format report's text: valid workflows per stage, the warm start's loss, the
workflow size on easy and hard questions (records mode), GRPO per step, time and two completions."""

from __future__ import annotations

from collections import Counter
from typing import Any


def markdown(summary: dict[str, Any], losses: list[dict[str, float]], command: str) -> str:
    settings = summary["settings"]
    grpo, sft = settings["grpo"], settings["warm_start"]
    lines = [
        f"# {summary['title']}",
        "",
        f"Made by `{command}`. Workers: {summary['pool']}. The conductor is trained "
        "with transformers + TRL on this machine's CPU.",
        "",
        f"Stages: warm start = {sft['steps']} SFT steps x {sft['batch_size']} example workflows "
        f"(lr {sft['learning_rate']}); GRPO = {grpo['steps']} steps x "
        f"{grpo['questions_per_step']} questions x {grpo['group_size']} workflows "
        f"(lr {grpo['learning_rate']}, ≤ {grpo['max_completion_length']} completion tokens).",
        "",
        f"## Valid workflows on {settings['held_out']} {summary['held_out_label']} (greedy)",
        "",
        "| after | valid | share | invalid, by parser error |",
        "|---|---|---|---|",
    ]
    for stage, row in summary["validity"].items():
        errors = ", ".join(f"{k} {v}" for k, v in row["errors"].items()) or "—"
        lines.append(f"| {stage} | {row['valid']}/{row['n']} | {row['rate']:.0%} | {errors} |")
    if losses:
        lines += [
            "",
            f"Warm-start loss: {losses[0]['loss']:.3f} (step 1) → {losses[-1]['loss']:.3f} "
            f"(step {int(losses[-1]['step'])}).",
        ]
    if "held_out_groups" in summary:
        lines += [
            "",
            "## Workflow size on easy and hard questions (greedy, the same held-out questions)",
            "",
            "Easy: every worker's first recorded answer is right; hard: at most half are. The "
            "paper reports that the trained conductor calls fewer workers on easy questions and "
            "more on hard ones.",
            "",
            *size_table(summary),
        ]
    rewards = summary.get("grpo_log", [])
    if rewards:
        lines += [
            "",
            f"## GRPO per step (rollouts on {summary['rollouts_on']})",
            "",
            "| step | mean reward | workflows valid | answers right |",
            "|---|---|---|---|",
        ]
        for row in rewards:
            lines.append(
                f"| {int(row['step'])} | {row['reward']:.3f} | {row.get('parsed', 0):.0%} | "
                f"{row.get('right', 0):.0%} |"
            )
    base = summary["validity"].get("base")
    if base and base["samples"]:
        lines += ["", "A base-model completion (greedy):", "", "```", base["samples"][0], "```"]
    last = summary["validity"].get("grpo") or summary["validity"].get("warm start")
    if last and last["samples"]:
        lines += ["", "A trained completion (greedy):", "", "```", last["samples"][0], "```"]
    return "\n".join(lines) + "\n"


def size_table(summary: dict[str, Any]) -> list[str]:
    """Markdown: per stage and group, valid workflows, mean steps, distinct workers and the
    workers most often given the last step (whose output is the answer)."""
    groups: dict[str, list[str]] = summary["held_out_groups"]
    lines = [
        "| after | questions | valid | steps (mean) | distinct workers (mean) | answering worker |",
        "|---|---|---|---|---|---|",
    ]
    for stage, row in summary["validity"].items():
        for name, ids in groups.items():
            shapes = [row["shapes"][i] for i in ids if i in row["shapes"]]
            if not shapes:
                lines.append(f"| {stage} | {name} ({len(ids)}) | 0 | – | – | – |")
                continue
            steps = sum(s["steps"] for s in shapes) / len(shapes)
            workers = sum(s["models"] for s in shapes) / len(shapes)
            last = Counter(s["last"] for s in shapes).most_common(2)
            answering = ", ".join(f"{model} {count / len(shapes):.0%}" for model, count in last)
            lines.append(
                f"| {stage} | {name} ({len(ids)}) | {len(shapes)} | {steps:.2f} | {workers:.2f} "
                f"| {answering} |"
            )
    return lines
