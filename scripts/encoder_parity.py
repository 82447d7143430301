"""Does the fast encoder change what a trained TRINITY policy decides? The committed policy's
RouterDC score on the in-distribution test sets with its features from the reference encoder
(all-MiniLM-L6-v2 by sentence-transformers on torch, float32: what it was trained on) and from
ONNX Runtime (float32, and int8 products), side by side.

    python scripts/encoder_parity.py --data ../shared/data/routerdc --policy policies/trinity-replay

The static encoder (all-MiniLM-L6-v2-static) is a different feature, which the committed head
cannot read; `--static` trains a head on it with the committed policy's recipe (`consortium train
router`'s defaults: imitation, then sep-CMA-ES within 2,000,000 recorded rollouts, kept only if it
beats the warm start on held-out training questions) on the same training questions (the ID
train splits), and puts its score beside the reference's on the same test questions.

Pool: replay of recorded outcomes (split2_model7); the scores are RouterDC's (recorded outcome of
the chosen model per question), as `scripts/trinity_report.py` computes the committed policy's
row in process. No feature cache: every question is encoded by every encoder in this run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from consortium.coord.trinity.encoder import CachedEncoder, Encoder, SentenceEncoder
from consortium.coord.trinity.onnx_encoder import OnnxSentenceEncoder
from consortium.coord.trinity.policy import load_policy
from consortium.coord.trinity.static_encoder import StaticMiniLMEncoder
from consortium.demo.trinity_eval.variants import Variants
from consortium.replay.data import load_replay
from consortium.replay.protocol import row_from_choices, score_matrix
from consortium.replay.tasks import ID_DATASETS, load_replay_tasks
from consortium.train.trinity.settings import RecordedConfig, RouterTraining


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--policy", default="policies/trinity-replay")
    parser.add_argument("--limit", type=int, default=0, help="a seeded sample of the test tasks")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 ONNX encoder")
    parser.add_argument(
        "--static", action="store_true", help="also train and score a head on the static encoder"
    )
    args = parser.parse_args()
    data = load_replay(args.data, sources=["split2"])
    tasks = load_replay_tasks(
        data, datasets=ID_DATASETS, split="test", limit=args.limit or None, seed=0
    ).tasks
    questions = [t.question for t in tasks]
    scores = score_matrix(tasks, data.models["split2"])  # the policy's models, in its order
    encoders: dict[str, Encoder] = {
        "torch float32 (reference)": SentenceEncoder(),
        "onnx float32": OnnxSentenceEncoder(quantize=False),
    }
    if not args.no_int8:
        encoders["onnx int8"] = OnnxSentenceEncoder(quantize=True)
    print(f"pool: replay of recorded outcomes (split2_model7), {len(tasks)} ID test questions")
    print("| encoder | ID mean | Δ vs reference | choices changed | min cosine | encode s |")
    print("|---|---|---|---|---|---|")
    reference: tuple[float, np.ndarray, np.ndarray] | None = None
    for label, encoder in encoders.items():
        policy = load_policy(Path(args.policy), CachedEncoder(encoder))
        started = time.perf_counter()
        raw = np.concatenate(
            [encoder.encode(questions[i : i + 256]) for i in range(0, len(questions), 256)]
        )
        seconds = time.perf_counter() - started
        assert policy.encoder is not None
        features = policy.encoder.standardizer.apply(raw)  # type: ignore[attr-defined]
        logits = features @ policy.head.weights.T
        choices = logits[:, : len(policy.models)].argmax(axis=1)
        row = row_from_choices(label, tasks, scores, choices)
        mean = float(row.id_mean or 0.0)
        if reference is None:
            reference = (mean, choices, raw)
        delta = mean - reference[0]
        changed = float(np.mean(choices != reference[1]))
        cosine = float((raw * reference[2]).sum(axis=1).min())
        print(
            f"| {label} | {mean:.2f} | {delta:+.2f} | {100 * changed:.2f} % | {cosine:.4f} "
            f"| {seconds:.0f} |",
            flush=True,
        )
    if args.static and reference is not None:
        train = load_replay_tasks(data, datasets=ID_DATASETS, split="train").tasks
        static = StaticMiniLMEncoder()
        started = time.perf_counter()
        raw_train = static.encode([t.question for t in train])
        raw_test = static.encode(questions)
        seconds = time.perf_counter() - started
        variants = Variants(train, tasks, data.models["split2"], raw_train, raw_test)
        row = variants.trinity("static", RouterTraining(RecordedConfig()))
        mean = float(row.id_mean or 0.0)
        print(
            f"| all-MiniLM-L6-v2-static, head retrained on {len(train)} training questions "
            f"| {mean:.2f} | {mean - reference[0]:+.2f} | (another head) | (another feature) "
            f"| {seconds:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
