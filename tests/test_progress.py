"""Progress in a log file: a line per 10 % (and per quiet interval), none when drawing a bar."""

from __future__ import annotations

import io

from rich.console import Console

from consortium.core.progress import task_progress


def test_off_a_terminal_each_ten_percent_is_a_line() -> None:
    out = io.StringIO()
    with task_progress(Console(file=out, force_terminal=False, width=100)) as progress:
        bar = progress.add_task("rollouts", total=50)
        for _ in range(50):
            progress.advance(bar)
    lines = [line for line in out.getvalue().splitlines() if line]
    assert [line.split(" · ")[0] for line in lines] == [
        f"rollouts: {n:,}/50 ({2 * n} %)" for n in range(5, 55, 5)
    ]


def test_without_a_total_it_writes_on_the_clock() -> None:
    out = io.StringIO()
    with task_progress(Console(file=out, force_terminal=False, width=100)) as progress:
        progress.quiet = 0.0
        bar = progress.add_task("jobs", total=None)
        progress.advance(bar)
        progress.advance(bar)
    assert out.getvalue().strip().splitlines()[-1].startswith("jobs: 2 · ")


def test_a_terminal_gets_the_bar_not_lines() -> None:
    out = io.StringIO()
    with task_progress(Console(file=out, force_terminal=True, width=100)) as progress:
        bar = progress.add_task("rollouts", total=10)
        progress.update(bar, completed=10)
    assert "rollouts: 10/10 (100 %)" not in out.getvalue()
