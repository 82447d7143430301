"""`make serve-learns`: for each records set, streams of its train split through a real
`serve --learn` (`stream.run_stream`), the folder adopted at the end measured on the test split
beside the offline team and the offline λ = 0.02 fit, the served accuracy over the stream beside
the start policy's on the same requests, and a learning curve per set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from consortium.coord.answers.folder import AnswerPolicy, read_policy, write_policy
from consortium.coord.answers.trinity_turns import TrinityTurns
from consortium.demo.serve_learns.ceiling import Floor, exploration_floor, guard_ceiling
from consortium.demo.serve_learns.singles import single_policy
from consortium.demo.serve_learns.stream import (
    StreamPlan,
    StreamResult,
    run_stream,
    stream_questions,
)
from consortium.demo.serve_learns.test_split import agreement, over_http
from consortium.evaluation.recorded.outcomes import OutcomeTable
from consortium.evaluation.recorded.rule_runs import run_rule
from consortium.evaluation.recorded.runs import PolicyRun
from consortium.evaluation.recorded.tables import outcome_table
from consortium.evolve.guards import Decision, GuardConfig, bootstrap_differences
from consortium.records.store import Records, load_records
from consortium.train.answers.best_kind import fit_best_kind

SETS = ("gsm8k", "math", "humaneval", "date")
WINDOW = 50
RUNS: dict[str, dict[str, object]] = {
    "λ=0 from the cheapest": {"start": "cheapest", "lam": 0.0},
    "λ=0.02 from the most accurate": {"start": "most-accurate", "lam": 0.02},
    "flipped labels": {"start": "cheapest", "labels": "flipped"},
    "2 % labels": {"start": "cheapest", "label_share": 0.02},
}


@dataclass(frozen=True)
class Paired:
    difference: float
    low: float
    high: float

    def text(self) -> str:
        return f"{100 * self.difference:+.2f} [{100 * self.low:+.2f}, {100 * self.high:+.2f}]"


def paired(first: np.ndarray, second: np.ndarray) -> Paired:
    """second − first, with the 95 % paired bootstrap interval."""
    boot = bootstrap_differences(first.astype(float), second.astype(float), 4000, 0)
    difference = float(second.mean() - first.mean())
    return Paired(difference, float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975)))


def _played(table: OutcomeTable, policy: AnswerPolicy) -> PolicyRun:
    rule = policy.rule()
    if isinstance(rule, TrinityTurns):
        raise ValueError(f"{policy.name}: a TRINITY head is not replayed here")
    return run_rule(table, rule, policy.name)


@dataclass
class Row:
    run: str
    result: StreamResult
    adopted: str
    test: str
    versus_team: Paired
    versus_offline: Paired | None
    cost_ratio: float | None
    explore_share: float
    stream: Paired
    final_name: str


def _row(name: str, result: StreamResult, table: OutcomeTable, tested: dict[Path, PolicyRun],
         team: PolicyRun, offline: PolicyRun) -> Row:  # fmt: skip
    test = table.indices("test")
    assert result.start is not None  # `serving` holds it
    final = read_policy(result.serving)
    mine = tested[result.serving]
    start = _played(table, read_policy(result.start))
    index = {q: i for i, q in enumerate(table.question_ids)}
    asked = [index[a.question_id] for a in result.answered if a.question_id in index]
    served = np.array([a.correct for a in result.answered if a.question_id in index])
    served_usd = sum(a.cost for a in result.answered)
    lam = float(result.plan.lam)
    return Row(
        run=name,
        result=result,
        adopted=", ".join(r["adopted"] for r in result.refits if r["adopted"]) or "none",
        test=f"{100 * mine.correct[test].mean():.2f} % at ${mine.cost[test].mean():.5f}",
        versus_team=paired(team.correct[test], mine.correct[test]),
        versus_offline=paired(offline.correct[test], mine.correct[test]) if lam else None,
        cost_ratio=float(mine.cost[test].mean() / offline.cost[test].mean()) if lam else None,
        explore_share=result.explore_usd / max(served_usd + result.explore_usd, 1e-12),
        stream=paired(start.correct[asked], served),
        final_name=final.name,
    )


def serve_learns(
    records_root: Path,
    policies_root: Path,
    out: Path,
    work: Path,
    *,
    sets: tuple[str, ...] = SETS,
    explore: float = 0.5,
    explore_on: str = "answer",
    refit_every: int = 10,
    say: Callable[[str], None] = print,
) -> None:
    """Run every set's streams and write `out` (markdown) and a curve PNG per set beside it."""
    sections = []
    for name in sets:
        folder = records_root / name
        records = load_records(folder)
        table = outcome_table(records, work / "checks")
        team_folder, offline_folder = policies_root / f"{name}-team", work / name / "offline"
        offline_policy = fit_best_kind(folder, lam=0.02, cache_dir=work / "checks")
        write_policy(offline_folder, offline_policy)
        results = {}
        for run, options in RUNS.items():
            plan = replace(StreamPlan(folder, "cheapest"), explore=explore, explore_on=explore_on,
                           refit_every=refit_every, **options)  # type: ignore[arg-type]  # fmt: skip
            results[run] = run_stream(plan, work / name / run.replace(" ", "-"), say)
        ends = [result.serving for result in results.values()]
        say(f"{name}: the test split over HTTP for {len(ends) + 2} policy folders")
        tested = over_http(folder, [team_folder, offline_folder, *ends], table,
                           f"sqlite:///{work / name / 'eval.db'}")  # fmt: skip
        played = {path: _played(table, read_policy(path)) for path in tested}
        team, offline = tested[team_folder], tested[offline_folder]
        rows = [_row(run, result, table, tested, team, offline) for run, result in results.items()]
        png = out.with_name(f"{out.stem}-{name}.png")
        _curve(png, name, rows[:2], table)
        bounds = _bounds(folder, records, table, played[team_folder], played[offline_folder])
        parity = _parity(tested, played, table)
        sections.append(_section(name, rows, team, offline_policy.name, table, png.name, bounds,
                                 parity))  # fmt: skip
    header = _header(explore, explore_on, refit_every)
    out.write_text(header + "\n".join(sections), encoding="utf-8")


def _parity(tested: dict[Path, PolicyRun], played: dict[Path, PolicyRun],
            table: OutcomeTable) -> str:  # fmt: skip
    """How the records runner (the bounds', the stream comparisons') agrees with the HTTP eval on
    the test split, over every folder measured."""
    test = table.indices("test")
    differing, dollars = 0, 0.0
    for folder, http in tested.items():
        verdicts, usd = agreement(http, played[folder], test)
        differing, dollars = differing + verdicts, max(dollars, usd)
    return (
        f"The records runner against `eval` over HTTP on these {len(tested)} folders: "
        f"{differing} differing verdicts of {len(tested) * len(test)}, $ a question within "
        f"{dollars:.2g}."
    )


def _header(explore: float, explore_on: str, refit_every: int) -> str:
    explored = {"answer": "of the requests, once answered", "label": "of the labelled requests, "
                "once their label came (`--explore-on label`)"}[explore_on]  # fmt: skip
    return f"""# The team learns while it serves (`serve --learn`)

Made by `make serve-learns` (`scripts/serve_learns.py`). Pool: the HTTP replay of recorded outputs
(`consortium replay serve --records records/<set>`: each model's recorded texts, verbatim).

Declared: the traffic is each set's train split in shuffled order (seed 0), asked by 16 concurrent
clients of a real `consortium serve --learn`, who wait while the server refits (the replay
answers in milliseconds, faster than a refit or any real pool: unpaced, the traffic would run past
every refit); 30 % of the requests (seeded) are labelled with the
records' verdict, each label sent once 50 later answers came (a reference where the answer kind
takes one, so every sample of the request is graded as the records grade it; HumanEval: a verdict
on the served answer). Exploration: a share ε = {explore} {explored}, each explored request asked
of every pool model the policy did not ask (no $ cap). A refit every {refit_every} labels,
cross-fitted (5 folds of the labelled requests by a hash of the response id, each played by the
kind fitted on the other four; the guard judges every labelled request held out), with the
guards' defaults (sign test, α = 0.05; or 20 % cheaper and non-inferior within 2 points by
the exact bound of `evolve.guards.losses_bound`).
The adopted folder (the start policy where none was adopted) is then measured on the test split
by `eval` over an HTTP replay server of the records, beside the committed `policies/<set>-team`
and the offline λ = 0.02 fit measured the same way (paired, 95 % bootstrap CI in points). The
bounds and "stream vs start" use the records runner (the same rule objects the server runs,
played on the recorded samples); each section says how it agrees with `eval` on the test split.
"stream vs start" is the served accuracy over the stream against the start policy on the same
requests (paired CI). Exploration share: shadow $ over the
stream's $ (answers plus shadow calls).
"""


@dataclass(frozen=True)
class Bounds:
    """What any guarded learner could show on the stream (`ceiling`)."""

    labelled: int
    offline_vs_most_accurate: Decision
    floor: Floor | None


def _bounds(folder: Path, records: Records, table: OutcomeTable, team: PolicyRun,
            offline: PolicyRun) -> Bounds:  # fmt: skip
    plan = StreamPlan(folder, "cheapest")
    order, labelled = stream_questions(records, plan.seed, plan.label_share)
    index = {q: i for i, q in enumerate(table.question_ids)}
    rows = [index[q] for q in order]
    labelled_rows = [index[q] for q in order if q in labelled]
    cheapest, most_accurate = (
        _played(table, single_policy(folder, which)) for which in ("cheapest", "most-accurate")
    )
    guard = GuardConfig()
    return Bounds(
        len(labelled_rows),
        guard_ceiling(most_accurate, offline, labelled_rows, guard),
        exploration_floor(cheapest, team, rows, set(labelled_rows), plan.label_delay, guard),
    )


def _bounds_text(bounds: Bounds) -> str:
    ceiling = bounds.offline_vs_most_accurate
    verdict = "adopted" if ceiling.adopted else "refused"
    floor = bounds.floor
    floor_text = (
        "the guard never adopts the team from the cheapest model on these labels"
        if floor is None
        else f"the guard adopts the team from the cheapest model after {floor.labels} labels "
        f"(serving from answer {floor.adopted_at}); exploring only the team's own calls on each "
        f"labelled request until then and nothing after costs ${floor.explore_usd:.4f} beside "
        f"the stream's ${floor.stream_usd:.4f}: **{100 * floor.share:.1f} %** of the stream's $ "
        "(the least exploration for adopting the team here)"
    )
    return (
        f"What any guarded learner could show on this stream (the offline fits handed to the "
        f"guard as candidates on the stream's {bounds.labelled} labelled requests, in-sample for "
        f"them, so an upper bound): the offline λ = 0.02 fit against the most accurate model: "
        f"wins {ceiling.evidence.wins}, losses {ceiling.evidence.losses}: **{verdict}** "
        f"({ceiling.reason}); {floor_text}.\n"
    )


def _section(name: str, rows: list[Row], team: PolicyRun, offline: str, table: OutcomeTable,
             png: str, bounds: Bounds, parity: str) -> str:  # fmt: skip
    test = table.indices("test")
    lines = [
        f"\n## {name}\n",
        f"Offline team (`policies/{name}-team`): {100 * team.correct[test].mean():.2f} % at "
        f"${team.cost[test].mean():.5f} a question; offline λ = 0.02 fit: `{offline}`. "
        f"{_shadow_pass(table)}\n",
        "| run | adopted | serving at the end | test accuracy, $/q | vs team (points) | "
        "vs offline λ=0.02 | $ vs offline | exploration share | stream vs start | labels |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        offline_text = row.versus_offline.text() if row.versus_offline else "–"
        ratio = f"{100 * row.cost_ratio:.0f} %" if row.cost_ratio is not None else "–"
        lines.append(
            f"| {row.run} | {row.adopted} | `{row.final_name}` | {row.test} | "
            f"{row.versus_team.text()} | {offline_text} | {ratio} | "
            f"{100 * row.explore_share:.1f} % | {row.stream.text()} | {_labels(row.result)} |"
        )
    lines.append(f"\n{parity}\n")
    lines.append(_bounds_text(bounds))
    lines.append(f"![served accuracy and $ per window of {WINDOW} requests]({png})\n")
    return "\n".join(lines)


def _shadow_pass(table: OutcomeTable) -> str:
    """What exploring one request costs beside the cheapest model's answer (the floor of the
    exploration share from the cheapest start)."""
    train = table.indices("train")
    costs = sorted(table.mean_cost(m, train) for m in range(table.n_models))
    return (
        f"A shadow pass (every model but the cheapest, one sample) costs ${sum(costs[1:]):.5f}, "
        f"{sum(costs[1:]) / costs[0]:.0f}× the cheapest model's answer (train means)."
    )


def _labels(result: StreamResult) -> str:
    failed = f" ({result.failed} requests failed)" if result.failed else ""
    return f"{result.labels}{failed}"


def _curve(path: Path, name: str, rows: list[Row], table: OutcomeTable) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (accuracy, dollars) = plt.subplots(1, 2, figsize=(11, 4))
    index = {q: i for i, q in enumerate(table.question_ids)}
    for row, colour in zip(rows, ("tab:blue", "tab:orange"), strict=False):
        answered = [a for a in row.result.answered if a.question_id in index]
        assert row.result.start is not None
        start = _played(table, read_policy(row.result.start))
        windows = range(0, len(answered), WINDOW)
        x = [w + WINDOW / 2 for w in windows]
        served = [np.mean([a.correct for a in answered[w : w + WINDOW]]) for w in windows]
        baseline = [np.mean([start.correct[index[a.question_id]] for a in answered[w : w + WINDOW]])
                    for w in windows]  # fmt: skip
        usd = [np.mean([a.cost for a in answered[w : w + WINDOW]]) for w in windows]
        start_usd = [np.mean([start.cost[index[a.question_id]] for a in answered[w : w + WINDOW]])
                     for w in windows]  # fmt: skip
        accuracy.plot(x, [100 * v for v in served], color=colour, label=f"{row.run}: served")
        accuracy.plot(x, [100 * v for v in baseline], color=colour, linestyle=":",
                      label=f"{row.run}: start policy")  # fmt: skip
        dollars.plot(x, usd, color=colour, label=f"{row.run}: served")
        dollars.plot(x, start_usd, color=colour, linestyle=":", label=f"{row.run}: start policy")
        versions = [a.version for a in answered]
        for at in [i for i in range(1, len(versions)) if versions[i] != versions[i - 1]]:
            for axis in (accuracy, dollars):
                axis.axvline(at, color=colour, alpha=0.4)
    accuracy.set_ylabel("accuracy per window (%)")
    dollars.set_ylabel("$ per request (answers only)")
    for axis in (accuracy, dollars):
        axis.set_xlabel(f"request (windows of {WINDOW}; vertical lines: adoptions)")
    accuracy.legend(fontsize=7)
    figure.suptitle(f"{name}: serve --learn over the HTTP replay", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
