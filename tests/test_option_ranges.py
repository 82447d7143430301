"""Options outside their range are refused before any work starts: one clear line, exit 1.
Every range-checked option uses the same callback (`consortium.cli.options.in_range`); a few
commands stand for all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import cli, one_line_error

POOL = ["--pool", "pool.toml"]
TRAIN = [*POOL, "--tasks", "replay:data=x", "--out", "out"]

REFUSED = [
    (["serve", *POOL, "--policy", "single:a", "--port", "99999"], "--port must be between 1"),
    (["replay", "serve", "--data", ".", "--port", "70000"], "--port must be between 1"),
    (["train", "router", *TRAIN, "--rollouts", "-5"], "--rollouts must be at least 1, got -5"),
    (["train", "trinity", *TRAIN, "--generations", "0"], "--generations must be at least 1"),
    (["train", "trinity", *TRAIN, "--sigma0", "0"], "--sigma0 must be above 0"),
    (["eval", *POOL, "--tasks", "x", "--concurrency", "0"], "--concurrency must be at least 1"),
    (["eval", *POOL, "--tasks", "x", "--max-cost", "-1"], "--max-cost must be at least 0"),
    (["evolve", *POOL, "--out", "o", "--tasks", "x", "--rounds", "0"], "--rounds must be"),
]


@pytest.mark.parametrize(
    ("args", "expected"), REFUSED, ids=[" ".join([*a[:2], *a[-2:]]) for a, _ in REFUSED]
)
def test_out_of_range_option_is_one_line(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    one_line_error(cli(*args), expected)
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()
