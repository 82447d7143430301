"""Records folders (consortium.records) as replay data: every recorded sample's text, served as
recorded; the k-th ask for a question gets the k-th sample."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from consortium.core.errors import ConfigError
from consortium.records.split import split_of
from consortium.records.store import load_records
from consortium.replay.data import (
    SOURCES,
    RecordedSample,
    ReplayData,
    ReplayRecord,
    Source,
    load_replay,
)
from consortium.replay.protocol_turns import RecordedDebate, joined, recorded_debates


def load_records_replay(folders: Sequence[str | Path]) -> ReplayData:
    """One replay record per (data set, question), holding every model's samples in order."""
    records: list[ReplayRecord] = []
    files: list[str] = []
    prices: dict[str, tuple[float, float]] = {}
    debates: dict[str, RecordedDebate] = {}
    for folder in folders:
        loaded = load_records(folder)
        manifest = loaded.manifest
        debates = joined(debates, recorded_debates(loaded))
        for model, price in manifest.prices.items():
            prices.setdefault(model, (price.input_per_mtok, price.output_per_mtok))
        columns = ["question_id", "question", "model", "sample", "response", "correct"]
        columns += ["tokens_in", "tokens_out"]
        grouped: dict[str, tuple[str, dict[str, list[tuple[int, RecordedSample]]]]] = {}
        for row in loaded.table.select(columns).to_pylist():
            question, by_model = grouped.setdefault(row["question_id"], (row["question"], {}))
            sample = RecordedSample(
                row["response"] or "", bool(row["correct"]), row["tokens_in"], row["tokens_out"]
            )
            by_model.setdefault(row["model"], []).append((row["sample"], sample))
        for index, (question_id, (question, by_model)) in enumerate(grouped.items()):
            samples = {
                model: tuple(sample for _, sample in sorted(found, key=lambda pair: pair[0]))
                for model, found in by_model.items()
            }
            records.append(
                ReplayRecord(
                    "records",
                    manifest.dataset,
                    split_of(manifest.dataset, question_id),
                    index,
                    question,
                    {m: sum(s.correct for s in got) / len(got) for m, got in samples.items()},
                    samples=samples,
                    question_id=question_id,
                )
            )
        files.append(f"{Path(folder).name}/outputs.parquet")
    return ReplayData(records, files, prices=prices, debates=debates)


def merged(first: ReplayData, second: ReplayData) -> ReplayData:
    """Both data sets behind one server (e.g. the RouterDC folder and records folders)."""
    return ReplayData(
        first.records + second.records,
        first.files + second.files,
        first.duplicates_dropped + second.duplicates_dropped,
        prices={**first.prices, **second.prices},
        debates=joined(first.debates, second.debates),
    )


def served_data(
    data: Path | None, records: Sequence[Path], sources: Sequence[Source] = SOURCES
) -> ReplayData:
    """What `replay serve` serves: the RouterDC folder's `sources`, the records folders, or both
    merged; neither is one line."""
    if data is None and not records:
        raise ConfigError("give --data (the RouterDC folder) or --records (records folders)")
    recorded = load_replay(data, sources=sources) if data is not None else None
    if records:
        served = load_records_replay(records)
        recorded = served if recorded is None else merged(recorded, served)
    assert recorded is not None
    return recorded
