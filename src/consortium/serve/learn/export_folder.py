"""`consortium feedback export`: a learning server's labelled traffic as a records folder, for the
batch tools (`train coordinator --records`, `evolve --tasks records:path=…`), written by the
function and rule a refit uses (`export.export_labelled`).

DIR does not record the pool file: the pool's models are taken as every model DIR's traffic asked
(served or explored): a pool model never asked has no sample, and a refit would export nothing
with it. The policy (its answer kind and prices) is the one given (`--policy`), else DIR's newest
adopted version, else the policy its server started from (`DIR/policies/start`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from consortium.coord.answers.folder import AnswerPolicy, read_policy
from consortium.core.errors import ConfigError
from consortium.records.store import Records
from consortium.serve.learn import versions
from consortium.serve.learn.export import export_labelled
from consortium.serve.learn.learner import answer_kind_of
from consortium.serve.learn.store import TrafficStore, store_url

AFTER = "serve with --explore, so that labelled requests get a sample of every pool model"


@dataclass(frozen=True)
class Exported:
    records: Records
    labelled: int
    """Every labelled request in DIR's store; those written are `records.manifest.questions`."""
    policy: str
    """The policy folder whose answer kind and prices the records state."""

    def summary(self) -> str:
        written = self.records.manifest.questions
        models = self.records.manifest.models
        left = self.labelled - written
        why = ": no sample of every model (not explored)" if left else ""
        return (
            f"{written} labelled requests written to {self.records.folder} ({len(models)} models: "
            f"{', '.join(models)}; policy {self.policy}); {left} left out{why}"
        )


def export_traffic(folder: Path, traces: str, out: Path, policy: Path | None) -> Exported:
    """DIR's labelled requests with a sample of every model its traffic asked, as records in
    `out` (a new or empty folder); each bad input is one ConfigError line, nothing written."""
    kind = answer_kind_of(folder)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out}: exists and is not empty; give a new folder")
    start = versions.start_folder(folder)
    chosen = policy or versions.latest(folder) or (start if start.is_dir() else None)
    if chosen is None:
        raise ConfigError(
            f"{folder} adopted no version and does not record the policy serve started from "
            "(a server before it kept one): give it as --policy FOLDER"
        )
    serving = _policy(chosen, kind)
    store = TrafficStore(store_url(folder, traces))
    try:
        labelled, models = store.labelled(), store.models_asked()
    finally:
        store.close()
    if not labelled:
        raise ConfigError(f"{folder}: no labelled request yet (POST /v1/feedback, feedback import)")
    if len(models) < 2:
        raise ConfigError(
            f"{folder}: no labelled request has a sample of every pool model: its traffic asked "
            f"only {', '.join(models) or 'no model'} ({AFTER})"
        )
    records = export_labelled(out, labelled, serving, models)
    if records is None:
        raise ConfigError(
            f"{folder}: no labelled request has a sample of every pool model "
            f"({', '.join(models)}) among {len(labelled)} labelled ({AFTER})"
        )
    return Exported(records, len(labelled), str(chosen))


def _policy(folder: Path, kind: str) -> AnswerPolicy:
    policy = read_policy(folder)
    if policy.answer_kind != kind:
        raise ConfigError(
            f"--policy {folder}: answers {policy.answer_kind}, but the server learning in this "
            f"folder served {kind}"
        )
    return policy
