"""The import report's section on recorded debates: per folder, the questions, how many the first
answers split, how the recorded debates end and how long they run, and how our reading of every
turn agrees with the source's: row by row, and on the debate's final answer (the protocol's rule
played on our answers and on the source's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from consortium.coord.debate.rule import DebateRule, Said, agreed
from consortium.evaluation.debates.play import (
    Debated,
    Turn,
    as_the_source_read,
    debated_questions,
    play,
    turn_of,
)
from consortium.evaluation.tables import markdown_table
from consortium.records.store import Records


@dataclass(frozen=True)
class ImportCounts:
    folder: str
    run: str
    questions: int
    disputed: int
    """Questions whose first answers differ, as the source read them."""
    endings: dict[str, int]
    """Debates by how the recording ends them, as the source read the turns."""
    mean_turns: float
    max_turns: int
    final_ours: float
    final_source: float
    final_agreement: float
    turn_agreement: float
    turn_rows: int
    alone_agreement: float
    alone_rows: int


def _said(turns: Sequence[Turn]) -> list[Said]:
    return [Said(turn.model, turn.answer) for turn in turns]


def _final(rule: DebateRule, debated: Debated) -> bool:
    played = play(rule, debated)
    return played.final is not None and turn_of(debated, rule, played.final).correct


def _ending(rule: DebateRule, debated: Debated) -> str:
    """How the recording ends a debate, the rule played on its answers."""
    if len(debated.turns) == len(rule.speakers):
        return "not debated"
    played = play(rule, debated)
    if played.used < len(debated.turns):
        return "off the rule"
    if played.refused:
        return "unfinished"
    return "agreed" if played.reason.startswith("agreed") else "at the cap"


def count_import(loaded: Records) -> ImportCounts:
    """One folder's line."""
    protocol = loaded.manifest.protocol
    assert protocol is not None
    rule = DebateRule(tuple(protocol.speakers), protocol.max_rounds)
    questions = debated_questions(loaded)
    theirs = [as_the_source_read(q) for q in questions]
    n = len(rule.speakers)
    disputed = [q for q in theirs if not agreed(_said(q.turns[:n]), rule.speakers)]
    endings: dict[str, int] = {}
    for q in disputed:
        kind = _ending(rule, q)
        endings[kind] = endings.get(kind, 0) + 1
    lengths = [len(q.turns) - n for q in questions if len(q.turns) > n]
    ours = [_final(rule, q) for q in questions]
    source = [_final(rule, q) for q in theirs]
    table = loaded.table.select(["turn", "correct", "source_correct"]).to_pylist()
    turn_rows = [r for r in table if r["turn"] is not None and r["source_correct"] is not None]
    alone = [r for r in table if r["turn"] is None and r["source_correct"] is not None]
    return ImportCounts(
        loaded.folder.name,
        protocol.run,
        len(questions),
        len(disputed),
        endings,
        sum(lengths) / max(1, len(lengths)),
        max(lengths, default=0),
        100 * sum(ours) / len(questions),
        100 * sum(source) / len(questions),
        100 * sum(a == b for a, b in zip(ours, source, strict=True)) / len(questions),
        _agreement(turn_rows),
        len(turn_rows),
        _agreement(alone),
        len(alone),
    )


def _agreement(rows: Sequence[dict[str, object]]) -> float:
    return 100 * sum(bool(r["correct"]) == r["source_correct"] for r in rows) / max(1, len(rows))


ENDINGS = ("agreed", "at the cap", "unfinished", "off the rule", "not debated")


def debate_import_lines(all_records: Sequence[Records]) -> list[str]:
    """The section, or none when no folder recorded a debate."""
    counts = [count_import(r) for r in all_records if r.manifest.protocol is not None]
    if not counts:
        return []
    header = [
        "folder",
        "questions",
        "first answers differ",
        "debates: " + " / ".join(ENDINGS),
        "later turns (mean, max)",
        "final right: ours / source",
        "final verdicts agree",
        "turn rows agree",
        "replies alone agree",
    ]
    body = [
        [
            c.folder,
            str(c.questions),
            str(c.disputed),
            " / ".join(str(c.endings.get(kind, 0)) for kind in ENDINGS),
            f"{c.mean_turns:.2f}, {c.max_turns}",
            f"{c.final_ours:.2f} / {c.final_source:.2f}",
            f"{c.final_agreement:.2f}",
            f"{c.turn_agreement:.2f} of {c.turn_rows}",
            f"{c.alone_agreement:.2f} of {c.alone_rows}",
        ]
        for c in counts
    ]
    return [
        "## Recorded debates",
        "",
        DEBATES_NOTE,
        "",
        *markdown_table(header, body),
        "",
        FILES_NOTE,
        "",
    ]


DEBATES_NOTE = (
    "Per folder (one set, team and run of FORD's debates): the questions; those whose first "
    "answers differ as the source read them (the debate's questions); how each of those debates "
    "ends in the recording, the protocol's rule played on the answers the source read: agreed, "
    "at the cap (the last turn recorded for the set, still disagreeing), unfinished (the run's "
    "files stop before either), off the rule (the recording goes on where the rule stops, or "
    "stops where it goes on: the source's turn-0 file and the debate's own first answers "
    "differ), not debated (no debate in this run's files); the later turns recorded; the final "
    "answer's accuracy over all questions with the rule played on our reading of each turn and on "
    "the source's, and how often the two final verdicts agree; then row by row, how often our "
    "verdict equals the source's, on the debate's turns and on the replies to the question alone. "
    "The table above lumps each model's turns and its replies alone, so its warnings come from "
    "the replies alone: there our choice reader takes the last letter a reply states, and an "
    "explanation that names the other option after `Answer: A.` is read as that option (and "
    "text-davinci-003's `the answer (yes or no) is no` as A); the turns end on the answer line, "
    "where the two readings agree. Every disagreement left on the turns is a turn the source "
    "read no option from (no answer, or a letter or word that is none of the options, such as "
    "C of two) and whose explanation names one, which our reader takes."
)
FILES_NOTE = (
    "Files read: every `output/{chatgpt,davinci,gpt4}/<set>.jsonl` (the replies alone) and every "
    "turn file (`round<k>_<seat>/<set>_{agreed,candidate}<run>.jsonl`) of the three debate "
    "folders, by the run its suffix names (`round0` without a suffix where a run has none of its "
    "own). Not read: `round0/<set>_*2.jsonl` of the sets with no run 2 (the first answers read "
    "again: identical but for 1 ANLI and 4 COPA records), `round1_chatgpt/anli.jsonl` and "
    "`anli2.jsonl` (two more runs of ANLI's turn 1 that no later turn continues), the "
    "`backup/` folders (earlier partial turns 1 and 2 of e-CARE and StrategyQA), `gpt4_summary/` "
    "and `round1_chatgpt/summarize/` (gpt-4's summaries of debates, an ablation, not turns)."
)
