"""What a `consortium record` journal's calls were sent with, kept beside it: a resume must send
every call as the first start did (`recorder.record`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from consortium.records.errors import RecordsError
from consortium.records.schema import Sampling

SETTINGS = "journal.sampling.json"
"""What the journal's calls were sent with (`Sampling`): a resume must send the same."""


def journal_sampling(out: Path, asked: Sampling, journal: str) -> Sampling:
    """The settings of the journal's calls: those asked for, written at the first start; on a
    resume each call must be sent as the stored ones say (else a RecordsError naming each
    difference, before any call). `samples` may change: sample k is the same call whatever their
    number, so more extend the folder and fewer make a part of it. A journal written before the
    settings were kept takes those asked for."""
    path = out / SETTINGS
    stored = asked
    if (out / journal).exists() and path.exists():
        try:
            stored = Sampling.model_validate_json(path.read_bytes())
        except ValidationError as error:
            raise RecordsError(f"{path}: damaged ({error.errors()[0]['msg']})") from None
    differences = _differences(stored, asked)
    if differences:
        raise RecordsError(
            f"{out}: the journal was recorded with {'; '.join(differences)}; --resume must ask "
            "the same (or write to another --out)"
        )
    merged = asked.model_copy(update={"max_tokens": stored.max_tokens | asked.max_tokens})
    path.write_text(merged.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return merged


def _differences(stored: Sampling, asked: Sampling) -> list[str]:
    """Each setting a call of `asked` is sent with otherwise than under `stored`, as
    'SETTING OLD, not NEW'."""

    def shown(value: float | None) -> str:
        return "none (the endpoint's default)" if value is None else f"{value:g}"

    labels = {"temperature": "--temperature", "top_p": "top_p"}
    found = [
        f"{label} {shown(getattr(stored, name))}, not {shown(getattr(asked, name))}"
        for name, label in labels.items()
        if getattr(stored, name) != getattr(asked, name)
    ]
    found += [
        f"max_tokens {stored.max_tokens[name]} for {name} in the pool file, not {tokens}"
        for name, tokens in asked.max_tokens.items()
        if stored.max_tokens.get(name, tokens) != tokens
    ]
    return found
