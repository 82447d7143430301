"""Where the test suite's CPU went: CPU seconds per test file and per fixture set-up.

    CONSORTIUM_TEST_BUDGET=.bench/budget make test   # or test-all; the plugin tests/budget.py
    python scripts/test_budget.py .bench/budget       # the tables, most expensive first

CPU is user + sys of the pytest processes and the children they waited for (servers, commands).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def read_rows(folder: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for path in sorted(folder.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        raise SystemExit(f"no budget rows under {folder}: run pytest with CONSORTIUM_TEST_BUDGET")
    return rows


def per_file(rows: list[dict[str, object]]) -> list[tuple[str, float, float, int]]:
    """(file, CPU s, wall s, tests) for each test file, most CPU first."""
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    tests: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row["kind"] == "test":
            name = str(row["file"])
            cpu[name] += float(row["cpu"])  # type: ignore[arg-type]
            wall[name] += float(row["wall"])  # type: ignore[arg-type]
            tests[name].add(str(row["test"]))
    return sorted(
        ((name, cpu[name], wall[name], len(tests[name])) for name in cpu),
        key=lambda entry: -entry[1],
    )


def per_fixture(rows: list[dict[str, object]]) -> list[tuple[str, str, float, int]]:
    """(fixture, scope, CPU s of its set-ups, set-ups) for each fixture, most CPU first."""
    cpu: dict[tuple[str, str], float] = defaultdict(float)
    count: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        if row["kind"] == "fixture":
            key = (str(row["fixture"]), str(row["scope"]))
            cpu[key] += float(row["cpu"])  # type: ignore[arg-type]
            count[key] += 1
    return sorted(
        ((name, scope, cpu[(name, scope)], count[(name, scope)]) for name, scope in cpu),
        key=lambda entry: -entry[2],
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="the CONSORTIUM_TEST_BUDGET folder of a run")
    parser.add_argument("--top", type=int, default=25, help="rows per table (default 25)")
    args = parser.parse_args()
    rows = read_rows(args.folder)
    files = per_file(rows)
    total = sum(entry[1] for entry in files)
    print(f"CPU in the tests' set-ups, calls and tear-downs: {total / 60:.1f} min")
    print(f"\n{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
    for name, cpu, wall, count in files[: args.top]:
        print(f"{cpu:8.1f} {wall:8.1f} {count:6d}  {name}")
    print(f"\n{'CPU s':>8} {'set-ups':>8}  fixture (scope)")
    for name, scope, cpu, count in per_fixture(rows)[: args.top]:
        print(f"{cpu:8.1f} {count:8d}  {name} ({scope})")


if __name__ == "__main__":
    main()
