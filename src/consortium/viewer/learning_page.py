"""The body of the learning page (`consortium traces view --learn DIR`): the versions a learning
server adopted, each with the refit it came from and the guard's evidence, the refits it refused
and why, and its traffic per window of served requests as a table and two charts."""

from __future__ import annotations

from html import escape

from consortium.serve.learn.history import History, Refit, Version, Window
from consortium.viewer.html import num, table
from consortium.viewer.learning_chart import window_svg


def learning_body(history: History, folder: str) -> str:
    intro = (
        f"<p>learning server folder <code>{escape(folder)}</code>: {history.served} served "
        f"requests, {history.labelled} labelled. A version is placed by the labels its refit "
        "counted and by the first request it answered.</p>"
    )
    return (
        intro
        + "<h2>Versions</h2>"
        + _versions_table(history.versions)
        + "<h2>Refits refused</h2>"
        + _refused_table(history.refused)
        + f"<h2>Traffic per window of {history.window} served requests</h2>"
        + _charts(history)
        + _windows_table(history.windows)
    )


def _percent(share: float | None) -> str:
    return "" if share is None else f"{100 * share:.1f}"


def _evidence_cells(refit: Refit | None) -> list[str]:
    """Held-out tasks, candidate vs incumbent accuracy and $/task, the guard's reason."""
    if refit is None:
        return ["", "", "", "", "", "", "start policy"]
    evidence = refit.evidence
    cells = [str(evidence.get("tasks", ""))]
    for key in ("candidate_accuracy", "incumbent_accuracy"):
        cells.append(_percent(evidence.get(key)))
    for key in ("candidate_cost", "incumbent_cost"):
        cells.append(f"{evidence[key]:.6f}" if key in evidence else "")
    cells.append(str(evidence.get("test", "")))
    return [*(num(c) for c in cells[:5]), escape(cells[5]), escape(refit.reason)]


EVIDENCE_HEADER = [
    "held-out requests", "candidate acc %", "incumbent acc %", "candidate $/request",
    "incumbent $/request", "test", "guard's reason",
]  # fmt: skip


def _versions_table(found: list[Version]) -> str:
    rows = []
    for version in found:
        labelled = "" if version.refit is None else str(version.refit.labelled)
        first = "" if version.first_request is None else str(version.first_request)
        rows.append(
            [
                f"<b class='version'>{escape(version.name)}</b>",
                num(labelled),
                num(first),
                escape(version.kind),
                escape(version.policy),
                escape(version.replaces or ""),
                *_evidence_cells(version.refit),
            ]
        )
    header = ["version", "adopted at labels", "first request", "kind", "policy", "replaces"]
    return table([*header, *EVIDENCE_HEADER], rows, "versions")


def _refused_table(refused: list[Refit]) -> str:
    if not refused:
        return "<p id='no-refused' class='muted'>No refit was refused.</p>"
    rows = [
        [num(str(r.labelled)), escape(r.incumbent), escape(r.candidate or ""), *_evidence_cells(r)]
        for r in refused
    ]
    header = ["at labels", "incumbent", "candidate", *EVIDENCE_HEADER]
    return table(header, rows, "refused")


def _windows_table(windows: list[Window]) -> str:
    rows = [
        [
            num(f"{w.first}–{w.first + w.served - 1}"),
            num(str(w.served)),
            num(str(w.labelled)),
            num(str(w.right)),
            num(_percent(w.accuracy)),
            num(f"{w.cost_per_request:.6f}"),
            num(f"{w.shadow_cost:.6f}"),
            escape(", ".join(w.versions)),
        ]
        for w in windows
    ]
    header = [
        "requests", "served", "labelled", "right", "accuracy % (labelled)", "$ per request",
        "exploration $", "versions",
    ]  # fmt: skip
    return table(header, rows, "windows")


def _charts(history: History) -> str:
    windows = history.windows
    if not windows:
        return "<p class='muted'>No request served yet.</p>"
    adoptions = [
        (v.name, v.first_request) for v in history.versions[1:] if v.first_request is not None
    ]
    middle = [w.first - 1 + w.served / 2 for w in windows]
    accuracy = [
        (at, None if w.accuracy is None else 100 * w.accuracy,
         f"requests {w.first}–{w.first + w.served - 1}: {_percent(w.accuracy)}% of "
         f"{w.labelled} labelled")
        for at, w in zip(middle, windows, strict=True)
    ]  # fmt: skip
    cost = [
        (at, w.cost_per_request,
         f"requests {w.first}–{w.first + w.served - 1}: ${w.cost_per_request:.6f} per request")
        for at, w in zip(middle, windows, strict=True)
    ]  # fmt: skip
    served = history.served
    return window_svg(
        "learning-accuracy", "accuracy % (labelled)", accuracy, adoptions, served, top=100.0
    ) + window_svg("learning-cost", "$ per request", cost, adoptions, served)
