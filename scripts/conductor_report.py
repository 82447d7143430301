"""A real instruct model learns the Conductor's format: `make real-conductor`.

    python scripts/conductor_report.py --benchmarks ../shared/data/benchmarks
    python scripts/conductor_report.py --records records/gsm8k --grpo-steps 30


SmolLM2-135M-Instruct (the pinned GGUF file, dequantized by transformers) is trained as a
conductor of the local llama.cpp pool (SmolLM2-135M-Instruct + Gemma 3 270M, started here):
a supervised warm start on example workflows (TRL's SFTTrainer), then GRPO with the paper's gated
reward, the workflows run by the real workers on generated two-number arithmetic. The share of
valid workflows (greedy, held-out GSM8K questions) is measured before and after each stage.
Writes reports/conductor-smollm2.md and .json.

With `--records FOLDER` the workers are the replay of a records folder (recorded answers of real
models), the training questions its train split, and the held-out ones half from its test split's
easiest questions (every model right) and half from its hardest (at most half right): the report
adds each stage's workflow size on both halves (conductor-records-DATASET.md and .json). On replay a
step's answer is its model's recorded sample, whatever the step is told or shown (declared).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from consortium.demo.conductor_records import records_setup
from consortium.reports.conductor_format.request import ConductorFormatRequest
from consortium.reports.conductor_format.run import local_setup, run_conductor_format
from made_by import made_by


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--benchmarks", help="the public benchmark files (the llama.cpp mode)")
    parser.add_argument("--records", help="a records folder: its replay is the workers")
    parser.add_argument("--out", default="reports")
    parser.add_argument("--work", default=None, help="training folder (default: a temporary one)")
    parser.add_argument("--train-questions", type=int, default=200)
    parser.add_argument("--held-out", type=int, default=50)
    parser.add_argument("--sft-steps", type=int, default=40)
    parser.add_argument("--sft-batch", type=int, default=2)
    parser.add_argument("--sft-lr", type=float, default=1e-4)
    parser.add_argument("--grpo-steps", type=int, default=5)
    parser.add_argument("--questions-per-step", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--grpo-lr", type=float, default=5e-6)
    parser.add_argument("--max-completion", type=int, default=128)
    parser.add_argument("--worker-max-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # A plain `kill` unwinds the `with` blocks, so the worker servers stop too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not args.records and not args.benchmarks:
        raise SystemExit("give --benchmarks (the public benchmark files) or --records FOLDER")
    request = ConductorFormatRequest(
        **vars(args), script=made_by("conductor_report.py", sys.argv[1:])
    )
    setup = records_setup(request) if args.records else local_setup(request)
    report = run_conductor_format(request, setup)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{report.name}.md").write_text(report.markdown)
    (out / f"{report.name}.json").write_text(report.json)


if __name__ == "__main__":
    main()
