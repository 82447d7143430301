"""The two TRINITY reports' text: the served policy beside its variants (`trinity-eval.md`) and
the optimizers and encoders compared (`optimizers.md`), each built from what its JSON holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from consortium.evaluation.tables import markdown_table
from consortium.replay.protocol import ProtocolRow, protocol_json, protocol_markdown

OPTIMIZERS_HEADER = [
    "optimizer (10 x 577 = 5,770 weights)",
    "rollouts",
    "ID mean ± sd",
    "OOD mean ± sd",
]


def trinity_eval_markdown(
    report: Mapping[str, Any],
    rows: Sequence[ProtocolRow],
    datasets: Sequence[str],
) -> str:
    """`report`: the JSON (script, encoder, commands, pool); `rows`: its table's rows."""
    table = protocol_markdown(rows, datasets, report["pool"])
    return (
        f"# TRINITY on the replay pool, RouterDC protocol\n\nMade by `{report['script']}` "
        f"({report['encoder']} features). The committed policy was trained and served by:\n\n"
        + "".join(f"    {c}\n" for c in report["commands"])
        + "\nIts row comes from the served run (`eval --protocol routerdc`); the other rows are "
        "fitted on the same training questions and scored on the same test questions in "
        "process, from the recorded outcomes. Rewards in training: the recorded score of the "
        "chosen model (the expectation of the paper's binary reward; a declared variance "
        "reduction).\n\n" + table
    )


def optimizers_json(
    pool: str,
    sample: str,
    results: Mapping[str, Sequence[ProtocolRow]],
    encoder_rows: Sequence[ProtocolRow],
) -> dict[str, Any]:
    """Each optimizer's ID and OOD means per seed, and the encoders' protocol rows."""
    return {
        "protocol": "routerdc",
        "pool": pool,
        "sample": sample,
        "optimizers": {
            key: [{"id_mean": r.id_mean, "ood_mean": r.ood_mean} for r in rows]
            for key, rows in results.items()
        },
        "encoders": protocol_json(encoder_rows),
    }


def optimizers_markdown(
    report: Mapping[str, Any],
    script: str,
    rollouts: int,
    seeds: int,
    encoder_rows: Sequence[ProtocolRow],
    datasets: Sequence[str],
) -> str:
    """`report`: `optimizers_json`'s dict; `encoder_rows`: its encoders' rows."""
    optimizers: Mapping[str, Sequence[Mapping[str, float | None]]] = report["optimizers"]
    body = [
        [
            key,
            "0 (no rollouts)" if key.startswith("imitation (SFT)") else f"{rollouts:,}",
            _mean_sd([run["id_mean"] or 0 for run in runs]),
            _mean_sd([run["ood_mean"] or 0 for run in runs]),
        ]
        for key, runs in optimizers.items()
    ]
    return "\n".join(
        [
            "# Optimizers and encoders for the TRINITY router, RouterDC protocol",
            "",
            f"Made by `{script}`. Pool: {report['pool']}. "
            f"Scored on {report['sample']}. Head: SmolLM2-135M-"
            "Instruct's final hidden state at position −2 (576-d) plus the constant feature, "
            "7 model rows and 3 role rows. Budget: rollouts = questions answered by candidates. "
            f"{seeds} seeds; mean ± sd of the test-sample means.",
            "",
            *markdown_table(OPTIMIZERS_HEADER, body),
            "",
            "## Encoders (imitation → sep-CMA-ES; kNN and MLP on the same features)",
            "",
            protocol_markdown(encoder_rows, datasets, report["pool"]),
        ]
    )


def _mean_sd(values: list[float]) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values, ddof=1) if len(values) > 1 else 0:.2f}"
