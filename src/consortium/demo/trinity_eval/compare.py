"""`make compare`: the optimizers at the paper's head size (SmolLM2-135M-Instruct's 576-d state
plus the constant: 10 x 577 = 5,770 weights), sep-CMA-ES, REINFORCE, random search and imitation
at equal rollout budgets over several seeds and both rewards; and the two encoders (MiniLM vs
SmolLM2), on seeded samples of the train and test sets."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from consortium.coord.trinity.encoder import SMOLLM2_NAME
from consortium.coord.trinity.policy import default_encoder
from consortium.demo.trinity_eval.markdown import optimizers_json, optimizers_markdown
from consortium.demo.trinity_eval.request import MINILM, TrinityReport, TrinityReportRequest
from consortium.demo.trinity_eval.variants import Variants, features, load_tasks
from consortium.replay.data import load_replay
from consortium.replay.protocol import ProtocolRow, anchor_rows, with_cis
from consortium.train.trinity.settings import RecordedConfig, RouterTraining

SETTINGS = [
    ("sep-CMA-ES", "es", "recorded", 0.5),
    ("sep-CMA-ES", "es", "draw", 0.5),
    ("REINFORCE", "reinforce", "recorded", 0.5),
    ("REINFORCE", "reinforce", "draw", 0.5),
    ("random search", "random", "recorded", 0.5),
    ("imitation (SFT)", "imitation", "recorded", 0.5),
    ("imitation → sep-CMA-ES", "es", "recorded", 0.002),
]
"""Per optimizer row: its title, optimizer, reward and initial step size."""


def run_compare(request: TrinityReportRequest) -> TrinityReport:
    """Optimizers at the paper's head size and the two encoders, on a test sample."""
    data = load_replay(request.data, sources=["split2"])
    models = data.models["split2"]
    train, test = load_tasks(
        data, request.compare_test_limit, request.seed, request.compare_train_limit
    )
    encoded: dict[str, Variants] = {}
    for encoder in (MINILM, SMOLLM2_NAME):
        cache = default_encoder(encoder, Path(request.policy) / "features.db")
        print(f"features ({encoder}):")
        encoded[encoder] = Variants(
            train, test, models, features(cache, train, "train"), features(cache, test, "test")
        )
    budget = RecordedConfig(rollouts=request.rollouts)
    results = _optimizer_rows(encoded[SMOLLM2_NAME], budget, request.seeds)
    encoder_rows = _encoder_rows(encoded, budget, request.seed)
    anchors = anchor_rows(test, models)
    datasets = list(dict.fromkeys(t.dataset for t in test))
    encoder_rows = with_cis(encoder_rows, anchors[0], anchors[1]) + anchors
    sample = (
        f"{request.compare_test_limit} test questions per dataset (seed {request.seed}); trained "
        f"on {request.compare_train_limit or 'all'} train questions per ID dataset"
    )
    report = optimizers_json(data.description("split2"), sample, results, encoder_rows)
    text = optimizers_markdown(
        report, request.script, request.rollouts, request.seeds, encoder_rows, datasets
    )
    print(text)
    return TrinityReport("optimizers", text, report)


def _optimizer_rows(
    smol: Variants, budget: RecordedConfig, seeds: int
) -> dict[str, list[ProtocolRow]]:
    results: dict[str, list[ProtocolRow]] = {}
    for label, optimizer, reward, sigma in SETTINGS:
        key = f"{label}, reward {reward}" if optimizer != "imitation" else label
        for seed in range(seeds):
            started = time.perf_counter()
            config = replace(budget, optimizer=optimizer, reward=reward, sigma0=sigma, seed=seed)  # type: ignore[arg-type]
            warm = "imitation" if label.startswith("imitation →") else "none"
            row = smol.trinity(key, RouterTraining(config, warm_start=warm, validation=0))
            results.setdefault(key, []).append(row)
            print(
                f"{key} seed {seed}: ID {row.id_mean:.2f} ({time.perf_counter() - started:.0f} s)"
            )
    return results


def _encoder_rows(
    encoded: dict[str, Variants], budget: RecordedConfig, seed: int
) -> list[ProtocolRow]:
    rows = []
    for encoder, variants in encoded.items():
        for components in (None, 32):
            rows.append(
                variants.trinity(
                    f"{encoder}, {'full' if components is None else '32 axes'}",
                    RouterTraining(replace(budget, optimizer="es"), components=components),
                )
            )
        rows += [replace(r, name=f"{encoder}, {r.name}") for r in variants.baselines(seed)[:2]]
    return rows
