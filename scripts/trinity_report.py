"""Train the TRINITY router on the replay pool and score it by RouterDC's protocol.

    python scripts/trinity_report.py --data ../shared/data/routerdc            # make train
    python scripts/trinity_report.py --data ../shared/data/routerdc --compare  # make compare

`make train`: encodes the questions once (feature cache: POLICY/features.db), trains the committed
policy with `consortium train router` (imitation warm start, then sep-CMA-ES on recorded
rewards), scores it through a replay server with `consortium eval --protocol routerdc` on the full
test sets, and puts beside it, on the same tasks, TRINITY variants (paper-like head without the
constant feature, no warm start, imitation alone, a projected feature), a kNN router, an MLP router,
the training split's best model per dataset, random routing and the anchors (best single,
per-dataset best, oracle) with paired bootstrap intervals. Writes OUT/trinity-eval.{md,json}.

`make compare`: the optimizer table at the paper's head size (SmolLM2-135M-Instruct's 576-d state
plus the constant: 10 x 577 = 5,770 weights): sep-CMA-ES, REINFORCE, random search and imitation at
equal rollout budgets, 3 seeds, both rewards; and the encoder comparison (MiniLM vs SmolLM2). On
seeded samples of the train and test sets (SmolLM2 takes ~0.4 s per question on 2 cores). Writes
OUT/optimizers.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from consortium.demo.trinity_eval.compare import run_compare
from consortium.demo.trinity_eval.request import MINILM, TrinityReportRequest
from consortium.demo.trinity_eval.served import run_trinity_eval
from made_by import made_by


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="reports")
    parser.add_argument("--policy", default="policies/trinity-replay")
    parser.add_argument("--encoder", default=MINILM, help="the committed policy's encoder")
    parser.add_argument("--rollouts", type=int, default=2_000_000)
    parser.add_argument("--test-limit", type=int, default=0, help="per dataset (0: full sets)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true", help="optimizers and encoders instead")
    parser.add_argument("--compare-test-limit", type=int, default=150)
    parser.add_argument(
        "--compare-train-limit", type=int, default=400, help="per dataset (0: every question)"
    )
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    options = {k: v for k, v in vars(args).items() if k != "compare"}
    request = TrinityReportRequest(
        **options,
        script=made_by("trinity_report.py", sys.argv[1:]),
        cli=(sys.executable, "-m", "consortium"),
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = run_compare(request) if args.compare else run_trinity_eval(request)
    (out / f"{report.stem}.json").write_text(json.dumps(report.data, indent=2))
    (out / f"{report.stem}.md").write_text(report.markdown)


if __name__ == "__main__":
    main()
