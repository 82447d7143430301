"""Recorded outputs of real models: one versioned Parquet format (a row per question × model ×
sample), a manifest per data set, the one train/test split, importers per source layout."""

from consortium.records.errors import RecordsError, SamplesExhausted
from consortium.records.rows import OutputRow
from consortium.records.schema import COLUMNS, SCHEMA_VERSION, Manifest, Price
from consortium.records.split import split_of
from consortium.records.store import Records, load_records, read_manifest, write_records

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "Manifest",
    "OutputRow",
    "Price",
    "Records",
    "RecordsError",
    "SamplesExhausted",
    "load_records",
    "read_manifest",
    "split_of",
    "write_records",
]
