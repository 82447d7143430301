"""Server-rendered SVG of a learning server's traffic: one value per window of served requests
(accuracy on the labelled ones, or $ per request) against the request number, with a dashed line
where each adopted version answered its first request."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from consortium.viewer.charts import nice_ticks, tick_label

WIDTH, HEIGHT = 900, 240
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 20, 45


def window_svg(
    css_id: str,
    ylabel: str,
    points: Sequence[tuple[float, float | None, str]],
    adoptions: Sequence[tuple[str, int]],
    served: int,
    top: float | None = None,
) -> str:
    """`points`: (request number at the window's middle, value or None, tooltip) per window;
    `adoptions`: (version, the number of its first request); `top`: the y axis' end (default:
    the largest value and a margin)."""
    values = [v for _, v, _ in points if v is not None]
    high = top if top is not None else (max(values, default=0.0) * 1.1 or 1.0)
    right_end = max(served, 1)

    def x(request: float) -> float:
        return LEFT + request / right_end * (WIDTH - LEFT - RIGHT)

    def y(value: float) -> float:
        return TOP + (1 - value / high) * (HEIGHT - TOP - BOTTOM)

    parts = [
        f"<svg id='{css_id}' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' "
        f"height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' font-family='sans-serif' "
        "font-size='11'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{WIDTH - LEFT - RIGHT}' "
        f"height='{HEIGHT - TOP - BOTTOM}' fill='#fcfcfc' stroke='#999'/>",
    ]
    for tick in [t for t in nice_ticks(0.0, high) if t <= high]:
        parts.append(
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(tick):.1f}' y2='{y(tick):.1f}' "
            f"stroke='#eee'/><text x='{LEFT - 6}' y='{y(tick) + 4:.1f}' text-anchor='end'>"
            f"{tick_label(tick, 'cost')}</text>"
        )
    for tick in [t for t in nice_ticks(0.0, float(right_end)) if t <= right_end]:
        parts.append(
            f"<text x='{x(tick):.1f}' y='{HEIGHT - BOTTOM + 16}' text-anchor='middle'>"
            f"{tick:.0f}</text>"
        )
    for version, first in adoptions:
        at = x(first - 1)  # the boundary before its first request
        parts.append(
            f"<line class='adoption' data-version='{escape(version)}' x1='{at:.1f}' "
            f"x2='{at:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='#17803d' "
            f"stroke-dasharray='5 3'/><text x='{at + 4:.1f}' y='{TOP + 12}' fill='#17803d'>"
            f"{escape(version)}</text>"
        )
    drawn = [(x(at), y(value), tip) for at, value, tip in points if value is not None]
    if len(drawn) > 1:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in drawn)
        parts.append(f"<polyline points='{path}' fill='none' stroke='#4e79a7' stroke-width='2'/>")
    parts.extend(
        f"<circle class='window' cx='{px:.1f}' cy='{py:.1f}' r='4' fill='#4e79a7'>"
        f"<title>{escape(tip)}</title></circle>"
        for px, py, tip in drawn
    )
    parts.append(
        f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{HEIGHT - 8}' text-anchor='middle' "
        "font-size='12'>served request (dashed: the first request of an adopted version)</text>"
        f"<text transform='translate(16,{(TOP + HEIGHT - BOTTOM) / 2}) rotate(-90)' "
        f"text-anchor='middle' font-size='12'>{escape(ylabel)}</text></svg>"
    )
    return "".join(parts)
