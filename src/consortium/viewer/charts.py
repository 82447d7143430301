"""Server-rendered SVG: the accuracy–cost plot of a run's policies."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from consortium.viewer.frontier import Point, frontier

WIDTH, HEIGHT = 900, 520
LEFT, RIGHT, TOP, BOTTOM = 70, 230, 20, 60


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    span = high - low
    step = 10 ** math.floor(math.log10(span / count)) if span > 0 else 1.0
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= count:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


class Scale:
    """Data x to pixels: logarithmic when the run's x values span more than 20×."""

    def __init__(self, values: Sequence[float]) -> None:
        positive = [v for v in values if v > 0]
        self.log = len(positive) == len(values) and max(positive) / min(positive) > 20
        self.low: float
        self.high: float
        if self.log:
            self.low = math.floor(math.log10(min(positive)))
            self.high = math.ceil(math.log10(max(positive)))
        else:
            top = max(values, default=1.0) or 1.0
            self.low, self.high = 0.0, top * 1.08
        if self.high <= self.low:
            self.high = self.low + 1

    def __call__(self, value: float) -> float:
        position = math.log10(value) if self.log else value
        share = (position - self.low) / (self.high - self.low)
        return LEFT + share * (WIDTH - LEFT - RIGHT)

    def ticks(self) -> list[float]:
        if self.log:
            return [10.0**e for e in range(int(self.low), int(self.high) + 1)]
        return [t for t in nice_ticks(self.low, self.high) if t <= self.high]


def _y(accuracy: float) -> float:
    return TOP + (1 - accuracy) * (HEIGHT - TOP - BOTTOM)


def tick_label(value: float, axis: str) -> str:
    if axis == "tokens":
        return f"{value:,.0f}"
    if value == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))  # two significant digits or more
    written = f"{value:.{digits}f}"
    return written.rstrip("0").rstrip(".") if "." in written else written  # 100 stays 100


CHAR_W, LINE_H = 6.2, 13.0
"""Approximate size of an 11px sans-serif character, for placing labels apart."""
Box = tuple[float, float, float, float]
OFFSETS = ((8, -8), (8, 14), (-8, -8), (-8, 14), (8, -22), (8, 28), (-8, -22), (-8, 28))


def _place(placed: list[Box], x: float, y: float, width: float) -> tuple[float, float]:
    """Where a point's label goes (text start, baseline): beside the point, at the first of
    `OFFSETS` (a negative dx puts it left of the point) that overlaps no label placed so far."""
    choice = None
    for dx, dy in OFFSETS:
        left = x + dx if dx > 0 else x + dx - width
        box = (left, y + dy - LINE_H + 3, left + width, y + dy + 3)
        if not any(b[0] < box[2] and box[0] < b[2] and b[1] < box[3] and box[1] < b[3]
                   for b in placed):  # fmt: skip
            choice = box
            break
    box = choice or (x + 8, y - 8 - LINE_H + 3, x + 8 + width, y - 5)
    placed.append(box)
    return box[0], box[3] - 3


def frontier_svg(found: Sequence[Point], axis: str) -> str:
    """Every policy as a point with its interval; single models as squares; the frontier line."""
    scale = Scale([p.x(axis) for p in found] or [1.0])
    parts = _axes_svg(scale, axis)
    line = frontier(found, axis)
    if len(line) > 1:
        path = " ".join(f"{scale(p.x(axis)):.1f},{_y(p.accuracy):.1f}" for p in line)
        parts.append(
            f"<polyline class='frontier' points='{path}' fill='none' stroke='#17803d' "
            "stroke-width='2' stroke-dasharray='6 3'/>"
        )
    placed: list[Box] = []
    for point in sorted(found, key=lambda p: p.x(axis)):
        parts.append(_point_svg(point, scale(point.x(axis)), point in line, placed))
    legend_x = WIDTH - RIGHT + 14
    parts.append(
        f"<circle cx='{legend_x}' cy='{TOP + 10}' r='6' fill='#c2410c'/>"
        f"<text x='{legend_x + 12}' y='{TOP + 14}'>policy</text>"
        f"<rect x='{legend_x - 5}' y='{TOP + 27}' width='10' height='10' fill='#777'/>"
        f"<text x='{legend_x + 12}' y='{TOP + 36}'>single model</text>"
        f"<line x1='{legend_x - 6}' x2='{legend_x + 6}' y1='{TOP + 54}' y2='{TOP + 54}' "
        "stroke='#17803d' stroke-width='2' stroke-dasharray='6 3'/>"
        f"<text x='{legend_x + 12}' y='{TOP + 58}'>frontier</text></svg>"
    )
    return "".join(parts)


def _axes_svg(scale: Scale, axis: str) -> list[str]:
    """The opening tag, the plot's frame, the grid with its tick labels and the axis titles."""
    parts = [
        f"<svg id='frontier-plot' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' "
        f"height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' font-family='sans-serif' "
        "font-size='11'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{WIDTH - LEFT - RIGHT}' "
        f"height='{HEIGHT - TOP - BOTTOM}' fill='#fcfcfc' stroke='#999'/>",
    ]
    for percent in range(0, 101, 20):
        y = _y(percent / 100)
        parts.append(
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eee'/>"
            f"<text x='{LEFT - 6}' y='{y + 4:.1f}' text-anchor='end'>{percent}</text>"
        )
    for tick in scale.ticks():
        x = scale(tick)
        parts.append(
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='#eee'/>"
            f"<text x='{x:.1f}' y='{HEIGHT - BOTTOM + 16}' text-anchor='middle'>"
            f"{tick_label(tick, axis)}</text>"
        )
    xlabel = "USD per task" if axis == "cost" else "tokens per task (every policy cost $0)"
    if scale.log:
        xlabel += ", log scale"
    parts.append(
        f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{HEIGHT - 18}' text-anchor='middle' "
        f"font-size='13'>{escape(xlabel)}</text>"
        f"<text transform='translate(18,{(TOP + HEIGHT - BOTTOM) / 2}) rotate(-90)' "
        "text-anchor='middle' font-size='13'>accuracy % (mean over datasets, 95% interval)</text>"
    )
    return parts


def _point_svg(point: Point, x: float, on_line: bool, placed: list[Box]) -> str:
    """One point at `x`: its interval, its marker (a square for a single model) with a tooltip,
    and its label where it overlaps no label `placed` so far (added there)."""
    y = _y(point.accuracy)
    low, high = _y(point.low), _y(point.high)
    colour = "#777" if point.single else "#c2410c"
    interval = (
        f"<line class='ci' x1='{x:.1f}' x2='{x:.1f}' y1='{low:.1f}' y2='{high:.1f}' "
        f"stroke='{colour}'/><line x1='{x - 4:.1f}' x2='{x + 4:.1f}' y1='{low:.1f}' "
        f"y2='{low:.1f}' stroke='{colour}'/><line x1='{x - 4:.1f}' x2='{x + 4:.1f}' "
        f"y1='{high:.1f}' y2='{high:.1f}' stroke='{colour}'/>"
    )
    title = (
        f"<title>{escape(point.policy)}: {100 * point.accuracy:.1f}% "
        f"[{100 * point.low:.1f}, {100 * point.high:.1f}], ${point.cost:.6f}/task, "
        f"{point.tokens:.0f} tokens/task</title>"
    )
    stroke = "#17803d' stroke-width='2" if on_line else "#333"
    if point.single:
        marker = (
            f"<rect class='point single' data-policy='{escape(point.policy)}' "
            f"x='{x - 5:.1f}' y='{y - 5:.1f}' width='10' height='10' fill='{colour}' "
            f"stroke='{stroke}'>{title}</rect>"
        )
    else:
        marker = (
            f"<circle class='point policy' data-policy='{escape(point.policy)}' "
            f"cx='{x:.1f}' cy='{y:.1f}' r='6' fill='{colour}' stroke='{stroke}'>{title}"
            "</circle>"
        )
    name = point.policy.removeprefix("single:")
    name = name if len(name) <= 30 else name[:29] + "…"
    left, base = _place(placed, x, y, CHAR_W * len(name))
    label = (
        f"<text class='label' x='{left:.1f}' y='{base:.1f}' fill='{colour}'>{escape(name)}</text>"
    )
    return interval + marker + label
