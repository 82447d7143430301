"""Real small language models in every collaboration pattern: `make real`.

    python scripts/real_report.py --benchmarks ../shared/data/benchmarks

Starts llama.cpp's server with SmolLM2-135M-Instruct and Gemma 3 270M (`consortium local`), then
runs each single model, vote, MoA, debate, reflect, TRINITY with all three roles (an untrained,
randomly initialised head) and the Conductor (SmolLM2 writing workflows in free text, falling
back to Gemma, its only worker, when a workflow does not parse) on small seeded samples: generated
two-number arithmetic, GSM8K and HumanEval (run in the sandbox). Writes reports/real-lms.md,
.json and .png.

The models are tiny: the figures show real behaviour and cost on this machine, not quality.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from consortium.reports.real_lms.plot import plot
from consortium.reports.real_lms.request import RealLmsRequest
from consortium.reports.real_lms.run import run_real_lms
from made_by import made_by


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--benchmarks", required=True, help="the public benchmark files")
    parser.add_argument("--out", default="reports")
    parser.add_argument("--arithmetic", type=int, default=24)
    parser.add_argument("--gsm8k", type=int, default=8)
    parser.add_argument("--humaneval", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # A plain `kill` unwinds the `with` blocks, so the llama.cpp servers stop too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    request = RealLmsRequest(**vars(args), script=made_by("real_report.py", sys.argv[1:]))
    report = run_real_lms(request)
    out = Path(args.out)
    (out / "real-lms.md").write_text(report.markdown)
    (out / "real-lms.json").write_text(json.dumps(report.data, indent=2))
    plot(report.rows, out / "real-lms.png")


if __name__ == "__main__":
    main()
