"""What a records folder recorded from a live pool says of where its rows came from: the pool's
endpoints as its source, the pool file's declared prices, the licence and the grader (`record`,
`record --protocol debate`)."""

from __future__ import annotations

from typing import Any

from consortium.pool.config import ModelConfig
from consortium.records.schema import Price, Source, SourceFile


def live_pool_provenance(
    configs: list[ModelConfig], pool_source: str, path: str, date: str, grader: object
) -> dict[str, Any]:
    """The Manifest fields `sources`, `licence`, `grader` and `prices` of a recording of
    `configs` (declared in `pool_source`) written to `path` on `date`, graded by `grader`."""
    return {
        "sources": [
            Source(
                repo=f"live pool ({pool_source})",
                commit="",
                files=[
                    SourceFile(path=path, model=c.name, note=f"{c.base_url} model {c.model}")
                    for c in configs
                ],
            )
        ],
        "licence": "outputs of the pool's models; their providers' terms apply",
        "grader": f"{type(grader).__module__}.{type(grader).__name__}",
        "prices": {
            c.name: Price(
                input_per_mtok=c.price_in,
                output_per_mtok=c.price_out,
                source=f"declared in {pool_source}",
                date=date,
            )
            for c in configs
        },
    }
