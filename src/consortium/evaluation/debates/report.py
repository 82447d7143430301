"""`reports/debates.md` (and `.json`): per set and team of the recorded debates, every policy of
when to talk on the test split, against the best single model, the vote and pick-the-stronger,
with paired bootstrap intervals and calls; the give-in rates; the learned rule's targets."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from consortium.evaluation.debates.figures import (
    DEBATE,
    GATE,
    PICK,
    RECORDED,
    VOTE,
    FolderFigures,
)
from consortium.evaluation.recorded.selection import Interval
from consortium.evaluation.tables import markdown_table

POOL = (
    "Pool: replay of recorded debates of real models: FORD (Xiong et al., Findings of EMNLP "
    "2023; GitHub Waste-Wood/FORD @ 14988c9, no licence: read from beside the checkout, never "
    "committed), gpt-3.5-turbo, text-davinci-003 and gpt-4 as the OpenAI API served them in "
    "2023, imported by `consortium records import --only ford-…` (reports/debates-import.md). "
    "Each policy is the debate's rule (`coord.debate.rule`) played in process on the recorded "
    "turns, each turn's answer as our grader reads it; the live `debate` policy over the HTTP "
    "replay of the same folder gives the same outcome per question (tests/test_debates_replay.py)."
)
SPLIT = (
    "Figures are on the test split (`records.split_of`: sha256 of `ford-<set>/<question id>`, 50 "
    "%, the same questions for every team of a set), in %; Δ = difference in points with a 95 % "
    "paired bootstrap interval over the test questions; calls = model calls per question; "
    "disputed = the questions whose first answers differ (as our grader reads them), where "
    "talking can change anything. **Chosen on the train split**: the stronger model (the best "
    "first answer), the learned rule's weights and threshold. **Chosen by the source**: the "
    "speaking order and the cap (6 later turns, ANLI's files 4, the roundtable 9). **Chosen on "
    "all questions, by an import fact, not a score**: where the source holds several runs of a "
    "debate, the run whose files end the most debates (ties: the run the authors' own "
    "process_final.py reads); reports/debates-import.md gives every run. Nothing here was "
    "chosen on the test split."
)


def _set(f: FolderFigures) -> str:
    return f.dataset.removeprefix("ford-")


def _team(f: FolderFigures) -> str:
    return " vs ".join(f.speakers) + f" ({f.run})"


def _ci(interval: Interval | None) -> str:
    return "–" if interval is None else interval.text()


def summary_table(figures: Sequence[FolderFigures]) -> list[str]:
    header = [
        "set",
        "team (run)",
        "test q (disputed)",
        "best single (train)",
        "vote",
        "pick the stronger",
        "debate",
        "Δ debate vs best single",
        "vs vote",
        "vs pick the stronger",
        "calls: pick / debate",
    ]
    body = []
    for f in figures:
        best, vote, pick = f.row(f"{f.best_single} alone"), f.row(VOTE), f.row(PICK)
        debate = f.row(RECORDED)
        body.append(
            [
                _set(f),
                _team(f),
                f"{f.test} ({f.test_disputed})",
                f"{f.best_single} {best.accuracy:.2f}",
                f"{vote.accuracy:.2f}",
                f"{pick.accuracy:.2f}",
                f"**{debate.accuracy:.2f}**",
                _ci(debate.versus.get("best single")),
                _ci(debate.versus.get("vote")),
                _ci(debate.versus.get("pick")),
                f"{pick.calls:.2f} / {debate.calls:.2f}",
            ]
        )
    return markdown_table(header, body)


def gate_table(figures: Sequence[FolderFigures]) -> list[str]:
    header = [
        "set",
        "team",
        "never talk",
        "always talk",
        "learned rule (talks on % of test q)",
        "Δ vs always",
        "Δ vs never",
        "oracle (hindsight)",
        "train: disputed q (talking changes the verdict), never / always / rule (5-fold) %",
        "rule kept",
    ]
    body = []
    for f in figures:
        never, always, gate = f.row(PICK), f.row(DEBATE), f.row(GATE)
        oracle = f.rows[-1]
        t = f.gate_train
        body.append(
            [
                _set(f),
                _team(f),
                f"{never.accuracy:.2f}",
                f"{always.accuracy:.2f}",
                f"**{gate.accuracy:.2f}** ({gate.talked:.1f})",
                _ci(f.gate_versus.get("always")),
                _ci(f.gate_versus.get("never")),
                f"{oracle.accuracy:.2f}",
                f"{t['train_disputed']:.0f} ({t['train_differ']:.0f}), {t['never']:.2f} / "
                f"{t['always']:.2f} / {t['learned_cross_validated']:.2f}",
                kept_rule(t["threshold"]),
            ]
        )
    return markdown_table(header, body)


def kept_rule(threshold: float) -> str:
    """What a fitted gate does, in words."""
    if threshold > 1:
        return "never talk"
    return "always talk" if threshold < 0 else f"talks when p > {threshold:g}"


def give_in_table(figures: Sequence[FolderFigures]) -> list[str]:
    header = [
        "set",
        "team",
        "model",
        "right first answers",
        "talked out of it",
        "wrong first answers",
        "talked into the right one",
    ]
    body = []
    for f in figures:
        for g in f.give_in:
            out = 100 * g.talked_out / max(1, g.right_first)
            into = 100 * g.talked_into / max(1, g.wrong_first)
            body.append(
                [
                    _set(f),
                    _team(f),
                    g.model,
                    str(g.right_first),
                    f"{g.talked_out} ({out:.1f} %)",
                    str(g.wrong_first),
                    f"{g.talked_into} ({into:.1f} %)",
                ]
            )
    return markdown_table(header, body)


def policy_table(f: FolderFigures) -> list[str]:
    header = [
        "policy",
        "test %",
        "disputed %",
        "calls",
        "$ / q",
        "talks on %",
        "Δ vs best single",
        "Δ vs vote",
        "Δ vs pick the stronger",
    ]
    body = [
        [
            r.name + (f" ({r.note})" if r.note else ""),
            f"{r.accuracy:.2f}",
            f"{r.disputed_accuracy:.2f}",
            f"{r.calls:.2f}",
            f"{r.cost:.5f}",
            f"{r.talked:.1f}",
            _ci(r.versus.get("best single")),
            _ci(r.versus.get("vote")),
            _ci(r.versus.get("pick")),
        ]
        for r in f.rows
    ]
    return markdown_table(header, body)


def _verdict(interval: Interval | None) -> str:
    if interval is None:
        return "is"
    if interval.low > 0:
        return "beats"
    return "loses to" if interval.high < 0 else "ties"


def _better_constant(f: FolderFigures) -> float:
    return max(f.row(PICK).accuracy, f.row(DEBATE).accuracy)


def _better_name(f: FolderFigures) -> str:
    return "always" if f.row(DEBATE).accuracy >= f.row(PICK).accuracy else "never"


def _contains_zero(interval: Interval | None) -> bool:
    return interval is None or interval.low <= 0 <= interval.high


def _gate_lines(figures: Sequence[FolderFigures]) -> list[str]:
    """The learned rule's targets: at least the better of always and never everywhere, both
    beaten with an interval above 0 on two or more; and, where not, why."""
    short = [f for f in figures if f.row(GATE).accuracy < _better_constant(f)]
    both = [
        f
        for f in figures
        if all((i := f.gate_versus.get(k)) is not None and i.low > 0 for k in ("always", "never"))
    ]
    kept = [f for f in figures if 0 <= f.gate_train["threshold"] <= 1]
    unclear = [f for f in kept if _contains_zero(f.gate_versus.get(_better_name(f)))]
    differ = [int(f.gate_train["train_differ"]) for f in figures]
    room = [f.rows[-1].accuracy - _better_constant(f) for f in figures]
    named = "; ".join(
        f"{_set(f)} {_team(f)} ({f.row(GATE).accuracy:.2f} against {_better_constant(f):.2f})"
        for f in short
    )
    return [
        f"- The learned rule is at least as accurate as the better of always and never talking "
        f"on {len(figures) - len(short)} of {len(figures)} (set, team)"
        + (f": not on {named}" if short else "")
        + f". It beats both with an interval above 0 on {len(both)} (target: 2)"
        + (": " + "; ".join(f"{_set(f)} {_team(f)}" for f in both) if both else "")
        + ".",
        f"- Why not more: on the train split talking changes the verdict on only "
        f"{min(differ)}–{max(differ)} disputed questions a (set, team), and the rule reads "
        "surface features of the first answers (each answer, the reply's length, its hedging "
        f"words); it is kept (cross-validated on train, at least the better constant rule) on "
        f"{len(kept)} of {len(figures)}, and on {len(unclear)} of those its test interval against "
        "the better constant rule on test contains 0. The "
        "oracle (talk exactly where talking pays, in hindsight) is above the better constant "
        f"rule by {min(room):+.2f} to {max(room):+.2f} points: there is room, which these "
        "features do not find.",
    ]


def target_lines(figures: Sequence[FolderFigures]) -> list[str]:
    lines = ["## Targets", ""]
    for f in figures:
        debate = f.row(RECORDED)
        said = ", ".join(
            f"{_verdict(debate.versus.get(key))} {label}"
            for key, label in (
                ("best single", "the best single"),
                ("vote", "the vote"),
                ("pick", "pick-the-stronger"),
            )
        )
        lines.append(
            f"- {_set(f)}, {_team(f)}: the debate {said} (at {debate.calls:.2f} calls a question)."
        )
    return [*lines, "", *_gate_lines(figures)]


def _parity_lines(figures: Sequence[FolderFigures]) -> list[str]:
    """The parity target: the recorded protocol over the HTTP replay, where it was run."""
    run = [f for f in figures if f.http]
    if not run:
        return []
    compared = sum(f.http["compared"] for f in run)
    equal = sum(f.http["equal"] for f in run)
    repeated = sum(f.http["repeated"] for f in run)
    per = "; ".join(f"{_set(f)} {_team(f)} {f.http['equal']}/{f.http['compared']}" for f in run)
    return [
        f"- Parity: the `debate` policy over the HTTP replay of each folder (a server per folder, "
        f"`replay.debate_parity`) gives the outcome of the recorded protocol played in process "
        f"(the submitted text, its verdict, the calls) on {equal} of {compared} questions "
        f"({100 * equal / max(1, compared):.2f} %; {repeated} questions whose text a folder "
        f"holds twice left out, the server serving one of them): {per}.",
    ]


def debates_markdown(figures: Sequence[FolderFigures], command: str, notes: Sequence[str]) -> str:
    lines = [
        "# When does talking pay? Recorded debates of real models, replayed",
        "",
        f"Generated by `{command}` (`make debates`).",
        "",
        POOL,
        "",
        SPLIT,
        "",
        "## Does the debate beat the best single model, the vote and pick-the-stronger?",
        "",
        "The debate is the recorded protocol: the first answers; where they differ, the models "
        "take turns, each after reading every earlier turn, until they agree or the cap; "
        "without agreement the answer stated most often, ties to the one stated first (the "
        "source's rule). The vote: the first answers' majority, ties to the one stated first. "
        "Pick the stronger: the stronger model's first answer unless all agree (never talk).",
        "",
        *summary_table(figures),
        "",
        "## The learned rule of when to talk",
        "",
        "Once the first answers differ, a logistic regression on features of the question and "
        "the first answers' texts (each model's answer, the reply's length, its hedging words; "
        "`coord.debate.gate`) decides between taking the stronger model's first answer (never "
        "talk) and debating on (always talk: the debate, its ties to the stronger model); "
        "fitted on the train split's disputed questions, its threshold chosen on them, and kept "
        "only where its 5-fold cross-validated train accuracy beats both never and always "
        "talking on train, else the better of those two is the rule (`consortium debates "
        "fit-gate` writes it for `--policy debate:…:gate=FOLDER`).",
        "",
        *gate_table(figures),
        "",
        "## Give-in rates",
        "",
        "On the disputed test questions, the recorded protocol: of each model's right first "
        "answers, how many it no longer held when the debate ended (talked out of it), and of "
        "its wrong ones, how many it had changed to the right answer.",
        "",
        *give_in_table(figures),
        "",
        *target_lines(figures),
        *_parity_lines(figures),
        "",
        "## Notes",
        "",
        *[f"- {note}" for note in notes],
        "",
        "## Every policy, per set and team",
        "",
    ]
    for f in figures:
        lines += [
            f"### {_set(f)}: {_team(f)}",
            "",
            f"Test questions {f.test}, disputed {f.test_disputed}; the stronger on train: "
            f"{f.best_single} (train accuracy of the first answers: "
            + ", ".join(f"{m} {a:.2f}" for m, a in f.train_accuracy.items())
            + ").",
            "",
            *policy_table(f),
            "",
        ]
    return "\n".join(lines)


NOTES = (
    "Debate always, in the sense of a turn even when the first answers agree, is not measured: "
    "the source recorded no turn after agreeing first answers, and the replay refuses such a "
    "turn (`--policy debate:…:always=1` over it submits the first answers with the refusal in "
    "its notes; tests/test_debates_replay.py). Here 'always talk' is the debate on every "
    "question whose first answers differ.",
    "The answer scorer (FrugalGPT features: which models gave an answer) cannot tell the "
    "disputed questions of a two-model team apart: on each, one model gave one answer and the "
    "other the other, so its features are the same on every question and it can only say "
    "always or never. The learned rule reads the texts instead.",
    "A turn's answer is the letter the source read from the reply (it kept the explanation and "
    "the letter apart, not the reply); our grader reads it back from `Answer: (X)`. The "
    "replies to the question alone (sample 0) are graded from their own text, where our "
    "grader and the source disagree more (reports/debates-import.md): those rows are not used "
    "here.",
)


def write_debates_report(figures: Sequence[FolderFigures], out: Path, command: str) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(debates_markdown(figures, command, NOTES), encoding="utf-8")
    data = {"command": command, "folders": [asdict(f) for f in figures]}
    out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return out
