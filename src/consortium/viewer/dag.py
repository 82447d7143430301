"""A Conductor or template workflow, read back from its trace rows and drawn as an SVG DAG.

The store keeps calls, not workflows; a workflow's steps are its worker calls without a system
prompt (role `worker`, or `worker@d` inside a recursive call at depth d; turn = step index + 1)
and its tool steps' rows (role `tool`: no model call, the tool's name as the model, the step it
passed on as the verdict), drawn dashed. A step after a tool that can end the workflow
(`accept`) waits for it whether or not it sees it: it is drawn to its right, a dotted arrow between.
A step's access list is read from its prompt: the executor gives each step the earlier steps it
may see as (subtask, output) chat turns, so each assistant turn of the prompt is matched to the
earlier step whose answer it is.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from consortium.coord.conductor.tools import STOPS
from consortium.viewer.html import Palette


@dataclass(frozen=True)
class DagStep:
    index: int
    call: dict[str, Any]
    visible: tuple[int, ...]
    """Indices of the earlier steps this step saw."""
    waits: tuple[int, ...] = ()
    """Earlier steps that could have ended the workflow (`accept`) and that it did not see."""

    @property
    def tool(self) -> bool:
        """A tool step: it called no model and passed on an earlier step's answer."""
        return _is_tool(self.call)

    @property
    def access(self) -> str:
        """The steps it sees, as the step list names them: "none", "0, 2", "0, 1 (all)"."""
        if not self.visible:
            return "none"
        listed = ", ".join(str(i) for i in self.visible)
        every = self.index > 1 and self.visible == tuple(range(self.index))
        return f"{listed} (all)" if every else listed


@dataclass(frozen=True)
class TracedWorkflow:
    depth: int
    steps: tuple[DagStep, ...]


def _is_tool(call: dict[str, Any]) -> bool:
    return str(call["role"] or "").startswith("tool")


def _depth(role: str) -> int:
    _, _, depth = role.partition("@")
    return int(depth) if depth.isdigit() else 0


def _messages(call: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        messages = json.loads(call["messages"] or "[]")
    except ValueError:
        return []
    return messages if isinstance(messages, list) else []


def _own_subtask(call: dict[str, Any]) -> str:
    users = [m.get("content", "") for m in _messages(call) if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def _visible(call: dict[str, Any], earlier: Sequence[dict[str, Any]]) -> tuple[int, ...]:
    """Which of `earlier` (steps 0..k-1) answered the assistant turns of this call's prompt."""
    messages = _messages(call)
    seen: list[int] = []
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        subtask = messages[position - 1].get("content", "") if position else ""
        matches = [
            j
            for j, step in enumerate(earlier)
            if j not in seen and (step["response"] or "") == message.get("content", "")
        ]
        exact = [j for j in matches if _own_subtask(earlier[j]).startswith(str(subtask))]
        if exact or matches:
            seen.append((exact or matches)[0])
    return tuple(sorted(seen))


def _is_step(call: dict[str, Any]) -> bool:
    """A workflow step: a worker call without a system prompt (TRINITY's role prompts are system
    messages; the workflow executor sends none), or a tool step's row."""
    role = call["role"] or ""
    if not role.startswith(("worker", "tool")) or call["turn"] is None:
        return False
    return all(m.get("role") != "system" for m in _messages(call))


def traced_workflows(calls: Sequence[dict[str, Any]]) -> list[TracedWorkflow]:
    """The workflows in one task's calls of one policy, outermost first."""
    by_depth: dict[int, list[list[dict[str, Any]]]] = defaultdict(list)
    for call in calls:
        if not _is_step(call):
            continue
        runs = by_depth[_depth(call["role"] or "")]
        # A step number seen again at this depth starts the next workflow (another inner run).
        if not runs or any(c["turn"] == call["turn"] for c in runs[-1]):
            runs.append([])
        runs[-1].append(call)
    found = []
    for depth in sorted(by_depth):
        for run in by_depth[depth]:
            ordered = sorted(run, key=lambda c: c["turn"])
            stops = [i for i, c in enumerate(ordered) if _is_tool(c) and c["model"] in STOPS]
            steps = []
            for i, call in enumerate(ordered):
                visible = _visible(call, ordered[:i])
                waits = tuple(j for j in stops if j < i and j not in visible)
                steps.append(DagStep(i, call, visible, waits))
            found.append(TracedWorkflow(depth, tuple(steps)))
    return found


BOX_W, BOX_H, GAP_X, GAP_Y, ARC = 170, 54, 60, 22, 26


def dag_svg(workflow: TracedWorkflow, palette: Palette) -> str:
    """Steps in layers (a step one layer right of the latest step it sees or waits for), arrows
    for access, dotted ones for waiting."""
    layer: list[int] = []
    for step in workflow.steps:
        layer.append(1 + max((layer[j] for j in step.visible + step.waits), default=-1))
    rows: dict[int, int] = defaultdict(int)
    where: list[tuple[float, float]] = []
    top = 10 + ARC  # room for the arcs of edges that skip a layer
    for column in layer:
        where.append((10 + column * (BOX_W + GAP_X), top + rows[column] * (BOX_H + GAP_Y)))
        rows[column] += 1
    width = 20 + (max(layer, default=0) + 1) * (BOX_W + GAP_X) - GAP_X
    height = top + 10 + max(rows.values(), default=1) * (BOX_H + GAP_Y) - GAP_Y
    parts = [
        f"<svg class='dag' data-depth='{workflow.depth}' xmlns='http://www.w3.org/2000/svg' "
        f"width='{width}' height='{height}' font-family='sans-serif' font-size='11'>"
        "<defs><marker id='arrow' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' "
        "markerHeight='7' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#555'/></marker></defs>"
    ]
    for step in workflow.steps:
        x, y = where[step.index]
        for j in step.visible + step.waits:
            sx, sy = where[j]
            if layer[step.index] - layer[j] > 1:
                # Over the boxes between: leave the top edge, arc above, enter the top edge.
                start, end = (sx + BOX_W / 2, sy), (x + BOX_W / 2, y)
                lift = min(start[1], end[1]) - ARC
                shape = f"C{start[0]},{lift} {end[0]},{lift} {end[0]},{end[1]}"
            else:
                start, end = (sx + BOX_W, sy + BOX_H / 2), (x, y + BOX_H / 2)
                shape = f"L{end[0]},{end[1]}"
            seen = j in step.visible
            kind, dash = ("edge", "") if seen else ("wait", " stroke-dasharray='2,3'")
            parts.append(
                f"<path class='{kind}' data-from='{j}' data-to='{step.index}' "
                f"d='M{start[0]},{start[1]} {shape}' fill='none' stroke='#555'{dash} "
                "marker-end='url(#arrow)'/>"
            )
    for step in workflow.steps:
        x, y = where[step.index]
        model = str(step.call["model"])
        label = f"{model} → {step.call['verdict']}" if step.tool else model
        short = label if len(label) <= 24 else label[:23] + "…"
        tool = " data-tool='1'" if step.tool else ""
        stroke = (
            "stroke='#888' stroke-dasharray='5,3'" if step.tool else f"stroke='{palette(model)}'"
        )
        parts.append(
            f"<g class='step' data-step='{step.index}' data-access='{escape(step.access)}'{tool}>"
            f"<rect x='{x}' y='{y}' width='{BOX_W}' height='{BOX_H}' rx='5' fill='#fff' "
            f"{stroke} stroke-width='3'/>"
            f"<text x='{x + 8}' y='{y + 16}' font-weight='bold'>step {step.index}</text>"
            f"<text x='{x + 8}' y='{y + 31}'>{escape(short)}</text>"
            f"<text x='{x + 8}' y='{y + 46}' fill='#555'>sees: {escape(step.access)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
