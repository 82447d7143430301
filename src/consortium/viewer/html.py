"""The viewer's HTML pieces: the page shell, tables, the pager and the model palette."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from starlette.responses import HTMLResponse

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2rem 1.5rem;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.2rem .45rem;text-align:left;font-size:.85rem;
 vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right} .ok{color:#17803d} .bad{color:#b42318}
.muted{color:#666;font-size:.85rem}
.shares{display:flex;width:190px;height:18px;border:1px solid #bbb;background:#f6f6f6}
.shares span{display:block;height:100%}
.role-verifier{opacity:.6}
.role-thinker{background-image:repeating-linear-gradient(45deg,#fff8 0 3px,transparent 3px 7px)}
.legend span.swatch{display:inline-block;width:.8rem;height:.8rem;margin:0 .2rem 0 .6rem;
 vertical-align:middle}
.turn{border-left:5px solid #4a72b0;margin:.5rem 0;padding:.3rem .6rem;background:#fafafa}
.turn .head{font-size:.9rem} .turn .head b{font-size:1rem}
.extracted{font-family:monospace;background:#eef3fb;padding:0 .3rem}
.returned{outline:2px solid #17803d}
.grade{padding:.4rem .7rem;border:1px solid #ccc;margin:.5rem 0;background:#fcfcf7}
pre{white-space:pre-wrap;max-height:16rem;overflow:auto;background:#fff;border:1px solid #eee;
 margin:.2rem 0;font-size:.8rem}
select{font-size:1rem;padding:.15rem}
nav a{margin-right:1rem}
"""

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#d62728",
    "#2ca02c", "#9467bd",
)  # fmt: skip
NONE_COLOUR = "#d9d9d9"


def page(title: str, body: str, status: int = 200, run_id: str | None = None) -> HTMLResponse:
    links = "<a href='/'>runs</a>"
    if run_id is not None:
        base = f"/runs/{quote(run_id)}"
        links += f"<a href='{base}'>run</a><a href='{base}/frontier'>frontier</a>"
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><nav>{links}</nav>"
        f"<h1>{escape(title)}</h1>{body}</body></html>",
        status_code=status,
    )


def table(header: Sequence[str], rows: Sequence[Sequence[str]], css: str = "") -> str:
    """A table of already-escaped cells; a cell starting with '<td' is used as written."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table class='{css}'><tr>{head}</tr>{body}</table>"


def num(value: str) -> str:
    return f"<td class='num'>{value}</td>"


def pager(base: str, page_number: int, first: int, shown: int, total: int, query: str) -> str:
    """Which rows this page shows, with links to the pages before and after."""
    if total == 0:
        return ""
    links = []
    if page_number > 1:
        links.append(f"<a class='prev' href='{base}?{query}page={page_number - 1}'>previous</a>")
    if first + shown < total:
        links.append(f"<a class='next' href='{base}?{query}page={page_number + 1}'>next</a>")
    where = f"showing {first + 1 if shown else 0}–{first + shown} of {total}"
    return f"<p class='pager'>{where}{' · ' if links else ''}{' · '.join(links)}</p>"


def page_number(text: str | None) -> int:
    try:
        return max(1, int(text or "1"))
    except ValueError:
        return 1


class Palette:
    """One colour per model, fixed for a page (models in the order given)."""

    def __init__(self, models: Sequence[str]) -> None:
        self.colours = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(dict.fromkeys(models))}

    def __call__(self, model: str) -> str:
        return self.colours.get(model, NONE_COLOUR)

    def legend(self) -> str:
        items = "".join(
            f"<span class='swatch' style='background:{c}'></span>{escape(m)}"
            for m, c in self.colours.items()
        )
        return (
            f"<p class='legend'>{items}<span class='swatch' style='background:#888'></span>"
            "worker <span class='swatch role-verifier' style='background:#888'></span>verifier "
            "<span class='swatch role-thinker' style='background:#888'></span>thinker</p>"
        )


def shares_bar(parts: Sequence[tuple[str, str, int]], palette: Palette, css: str = "") -> str:
    """A 100% bar of (model, role, count) parts, largest first; each part's title names it."""
    total = sum(count for _, _, count in parts) or 1
    spans = []
    for model, role, count in sorted(parts, key=lambda p: -p[2]):
        share = 100 * count / total
        role_css = f"role-{role.split('@')[0]}"
        spans.append(
            f"<span class='{role_css}' data-model='{escape(model)}' data-role='{escape(role)}' "
            f"title='{escape(model)} · {escape(role)}: {share:.0f}% ({count})' "
            f"style='width:{share:.2f}%;background-color:{palette(model)}'></span>"
        )
    return f"<div class='shares {css}'>{''.join(spans)}</div>"


def shares_text(parts: Sequence[tuple[str, str, int]], top: int = 3) -> str:
    """The largest parts as words: "gpt-4 · worker 97%, …"."""
    total = sum(count for _, _, count in parts) or 1
    ordered = sorted(parts, key=lambda p: -p[2])
    words = [f"{escape(m)} · {escape(r)} {100 * c / total:.0f}%" for m, r, c in ordered[:top]]
    if len(ordered) > top:
        words.append(f"+{len(ordered) - top} more")
    return f"<span class='muted'>{', '.join(words)}</span>"
