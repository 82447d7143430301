"""A new TRINITY training encodes with the static MiniLM; a policy folder keeps the encoder it was
trained with (the committed policy its contextual all-MiniLM-L6-v2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from consortium.coord.trinity.defaults import STATIC_MINILM_NAME
from consortium.coord.trinity.encoder import CachedEncoder, SentenceEncoder, StandardizedEncoder
from consortium.coord.trinity.onnx_encoder import OnnxSentenceEncoder
from consortium.coord.trinity.policy import default_encoder, load_policy
from consortium.coord.trinity.static_encoder import StaticMiniLMEncoder
from consortium.train.trinity.session import TrinityRequest
from tests.conftest import ROOT
from tests.test_cli import cli

COMMITTED = ROOT / "policies" / "trinity-replay"


def test_a_new_training_defaults_to_the_static_encoder(tmp_path: Path) -> None:
    cached = default_encoder(cache=tmp_path / "features.db")  # builds it; loads nothing yet
    assert isinstance(cached.encoder, StaticMiniLMEncoder)
    assert cached.name == STATIC_MINILM_NAME
    request = TrinityRequest(tmp_path / "pool.toml", "replay:data=x", tmp_path / "out")
    assert request.encoder == STATIC_MINILM_NAME
    contextual = default_encoder(SentenceEncoder.name, backend="torch")  # still on offer
    assert isinstance(contextual.encoder, SentenceEncoder)


@pytest.mark.parametrize("command", ["trinity", "router"])
def test_help_names_the_default_and_how_to_choose_the_contextual_encoder(command: str) -> None:
    shown = cli("train", command, "--help", env={"COLUMNS": "400", "TERM": "dumb"})
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.replace("│", " ").split())  # the help's box, unwrapped
    option = text[text.index("--encoder <str>") :].split(" --")[0]
    assert f"[default: {STATIC_MINILM_NAME}]" in option, option
    assert f"{SentenceEncoder.name} (the contextual encoder" in option, option


def test_the_committed_policy_loads_with_the_encoder_it_was_trained_on(tmp_path: Path) -> None:
    policy = tmp_path / COMMITTED.name  # a copy: loading opens its feature cache for writing
    shutil.copytree(COMMITTED, policy)
    trained_on = json.loads((policy / "policy.json").read_text())["encoder"]
    assert trained_on == SentenceEncoder.name != STATIC_MINILM_NAME
    coordinator = load_policy(policy)
    assert coordinator.encoder.name == SentenceEncoder.name
    assert isinstance(coordinator.encoder, StandardizedEncoder)
    cached = coordinator.encoder.encoder
    assert isinstance(cached, CachedEncoder)
    assert isinstance(cached.encoder, OnnxSentenceEncoder | SentenceEncoder)  # not the static one
    feature = coordinator.feature("What is 17 times 3?")
    model, _, _ = coordinator.head.choose(feature)
    assert 0 <= model < len(coordinator.models)
