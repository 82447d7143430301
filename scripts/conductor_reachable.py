"""What one fixed workflow per data set reaches on the mixed records pool of
`conductor_adaptive.py`, at each λ of its reward: the family member (each model alone, each
ordered pair then `check`, each model three times then `vote` or `check`, every model then
`vote`, and cascades through `accept`) with the best mean reward on training questions, measured
on each set's whole test split against the set's best single model (picked on train), with a
paired bootstrap interval. No conductor is involved: this is what a conductor writing one
workflow per set could reach with this pool and reward, and it says at which λ the adaptive
report's cost target is in reach.

    python scripts/conductor_reachable.py --lambdas 0,0.005,0.02,0.2

Writes reports/conductor-reachable.md and .json. Replay of recorded outputs: a step's answer is
its model's recorded sample whatever it is told (declared simulation).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from consortium.core.errors import ConsortiumError
from consortium.demo.served_team import ReplayedRecords
from consortium.records.errors import RecordsError
from consortium.reports.conductor_reachable import markdown, reachable_rows
from consortium.train.conductor.adaptive.request import FOLDERS, lambda_values
from made_by import made_by


def lambdas(text: str) -> list[float]:
    try:
        return lambda_values(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--out", default="reports")
    parser.add_argument("--report-name", default="conductor-reachable")
    parser.add_argument("--lambdas", type=lambdas, default="0,0.005,0.02,0.2")
    parser.add_argument("--train-per-set", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        rows = reachable_rows(ReplayedRecords(FOLDERS), args.lambdas, args.train_per_set, args.seed)
    except RecordsError as error:
        sys.exit(f"conductor_reachable: {error} (`make records` imports the four folders)")
    except ConsortiumError as error:
        sys.exit(f"conductor_reachable: {error}")
    text = markdown(rows, args.train_per_set, made_by("conductor_reachable.py", sys.argv[1:]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.report_name}.md").write_text(text)
    (out / f"{args.report_name}.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
