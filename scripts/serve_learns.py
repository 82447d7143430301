"""`make serve-learns`: reports/serve-learns.md and a learning curve per set
(`consortium.demo.serve_learns.report.serve_learns`)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from consortium.demo.serve_learns.report import SETS, serve_learns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=Path, default=Path("records"))
    parser.add_argument("--policies", type=Path, default=Path("policies"))
    parser.add_argument("--out", type=Path, default=Path("reports/serve-learns.md"))
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--explore", type=float, default=0.5)
    parser.add_argument("--explore-on", choices=("answer", "label"), default="answer")
    parser.add_argument("--refit-every", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-learns-") as work:
        serve_learns(
            args.records, args.policies, args.out, Path(work), sets=tuple(args.sets),
            explore=args.explore, explore_on=args.explore_on, refit_every=args.refit_every,
        )  # fmt: skip


if __name__ == "__main__":
    main()
