"""The recorded debates of FORD (`ford/` under the real-outputs folder) as records folders: one per
set, team and run, `ford-<set>-<team>-<run>`, each holding the team's replies to the questions
alone and the debate of that run (`importers.ford`). Every folder of a set is data set
`ford-<set>`, so a question falls in the same split whichever team debated it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from consortium.records.build import Part
from consortium.records.errors import RecordsError
from consortium.records.importers.ford import ford_rows
from consortium.records.importers.ford_files import SEAT_MODELS, FordRun, read_ford_run
from consortium.records.recipes import NO_GRANT, Recipe
from consortium.records.schema import Protocol, SourceFile

FORD = ("Waste-Wood/FORD", "14988c9")
FINAL_RULE = (
    "the answer stated most often in the debate, first answers included; a tie goes to the "
    "answer stated first (the source's process_final.py, which reads the turns' answers P)"
)
TEAMS = {
    "gpt35-davinci": ("debate_chatgpt_davinci", ("chatgpt", "davinci")),
    "gpt35-gpt4": ("debate_chatgpt_gpt4", ("chatgpt", "gpt4")),
    "gpt35-davinci-gpt4": ("debate_table_chatgpt_davinci_gpt4", ("chatgpt", "davinci", "gpt4")),
}
RUNS = {"run1": "", "run2": "2", "run3": "3"}
"""A run's name and the suffix of its files (`…_agreed2.jsonl`)."""
ALL_RUNS = ("run1", "run2", "run3")
RECORDED: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    *(("gpt35-davinci", name, ("run1",), 6) for name in ("copa", "socialiqa", "strategyqa")),
    ("gpt35-davinci", "anli", ("run1",), 4),
    *(("gpt35-davinci", name, ALL_RUNS, 6) for name in ("ecare", "piqa")),
    *(("gpt35-gpt4", name, ALL_RUNS, 6) for name in ("ecare", "piqa")),
    *(("gpt35-davinci-gpt4", name, ("run1",), 9) for name in ("ecare", "piqa")),
)
"""(team, set, runs, the last turn recorded): what the source holds."""
PRIMARY = {("gpt35-davinci", "ecare"): "run1"}
"""The run the debates report reads where a set has several: the most debates that end in the
run's files (`consortium records import`'s notes count them), ties to the run the authors' own
process_final.py reads (`…3.jsonl`); run3 unless named here."""


def folder_name(team: str, name: str, run: str) -> str:
    return f"ford-{name}-{team}-{run}"


def primary_folders() -> list[str]:
    """The folder of each (set, team) the debates report reads, in the source's order."""
    return [
        folder_name(team, name, runs[0] if len(runs) == 1 else PRIMARY.get((team, name), "run3"))
        for team, name, runs, _ in RECORDED
    ]


def _files(run_files: list[Path], seats: tuple[str, ...], root: Path) -> list[SourceFile]:
    models = {f"output/{seat}/": SEAT_MODELS[seat] for seat in seats}
    team = ", ".join(SEAT_MODELS[seat] for seat in seats)
    files = []
    for path in run_files:
        relative = str(path.relative_to(root))
        model = next((m for prefix, m in models.items() if relative.startswith(prefix)), team)
        files.append(SourceFile(path=str(path), model=model))
    return files


def _counts(read: FordRun) -> str:
    disputed = sum(question.disputed for question in read.questions.values())
    endings = Counter(debate.ending for debate in read.debates.values())
    return (
        f"{len(read.questions)} questions, {disputed} with different first answers; this run's "
        f"files end {endings['agreed']} debates in agreement and {endings['cap']} at the last "
        f"turn recorded ({read.max_rounds}), {endings['unfinished']} stop before either (kept as "
        f"far as recorded), {disputed - len(read.debates)} have no debate in this run"
    )


def _parts(team: str, name: str, run: str, cap: int) -> Callable[[Path], list[Part]]:
    folder, seats = TEAMS[team]

    def parts(root: Path) -> list[Part]:
        ford = root / "ford"
        read = read_ford_run(ford, folder, seats, name, RUNS[run])
        if read.max_rounds != cap:
            raise RecordsError(
                f"{ford / 'output' / folder}: {name}'s last turn is {read.max_rounds}, "
                f"expected {cap} (not the FORD snapshot this import knows)"
            )
        imported = ford_rows(read, _files(read.files, seats, ford))
        imported.notes.append(_counts(read))
        return [Part(imported, *FORD, root)]

    return parts


def debate_recipe(team: str, name: str, run: str, cap: int) -> Recipe:
    """The recipe of one set, team and run of FORD's debates (the last turn recorded: `cap`)."""
    folder, seats = TEAMS[team]
    models = [SEAT_MODELS[seat] for seat in seats]
    suffix = f"with suffix {RUNS[run]}" if RUNS[run] else "without a suffix"
    protocol = Protocol(kind="debate", speakers=models, max_rounds=cap, run=run, final=FINAL_RULE)
    return Recipe(
        f"ford-{name}",
        "choice",
        "FORD: " + NO_GRANT,
        _parts(team, name, run, cap),
        (
            f"FORD {folder}, {run} (the files {suffix}): {' vs '.join(models)} on {name}; "
            f"question id = the question's line in output/chatgpt/{name}.jsonl",
            "sample 0 of each model: its reply to the question alone (output/<model>/), graded "
            "by our grader against the answer the source read from it in the first turn; "
            "samples 1 and up: the debate's turns (turn 0: the first answers); a turn's response "
            "is the explanation the source kept, then `Answer: (X)` with the answer the source "
            "read from the reply (P; the reply itself is not kept)",
            "a run's debate of a question is the earliest record of the run's files that ends it "
            "(agreed, or still disagreeing at the last turn); it carries its own first answers",
        ),
        protocol,
    )


FORD_RECIPES: dict[str, Recipe] = {
    folder_name(team, name, run): debate_recipe(team, name, run, cap)
    for team, name, runs, cap in RECORDED
    for run in runs
}
