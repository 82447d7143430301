"""The recorded corpora under the real-outputs folder (`../shared/data`), one recipe per data set:
which files, which model each holds, which method or variant, joined on the same questions."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from consortium.records.build import LIMITED, Part, Progress, build_dataset
from consortium.records.debate_corpora import FORD_RECIPES
from consortium.records.errors import RecordsError
from consortium.records.importers.humaneval_runs import read_humaneval_runs
from consortium.records.importers.modelswitch import read_modelswitch
from consortium.records.importers.motcascade import read_motcascade
from consortium.records.importers.rereading import read_rereading
from consortium.records.importers.routerbench import load_mbpp_tests, read_routerbench
from consortium.records.importers.split2 import read_split2
from consortium.records.recipes import NO_GRANT, Recipe
from consortium.records.rows import OutputRow
from consortium.records.schema import Manifest

REREADING = ("Tebmer/Rereading-LLM-Reasoning", "0dbad50be663c2ea8c46334c2f9a086980d3e318")
MODELSWITCH = ("JianhaoChen-nju/ModelSwitch", "8a2db61821b2447d5ae0bac8cb0fb28cfd2f2e5b")
MOT = ("MurongYue/LLM_MoT_cascade", "8db97e652d196ce6380927c3b4df8af6d6c09746")
HUMANEVAL_RUNS = ("jamesmurdza/humaneval-results", "5eac7809fcfedaafeef5cea7f0a5b37783e19704")
ROUTERDC = ("shuhao02/RouterDC", "0e63989c5bf4363330b8a4616386e3f7f116d9f8")
SOURCES = (REREADING, MODELSWITCH, MOT, HUMANEVAL_RUNS, ROUTERDC)
"""Every repository (and commit) the recipes read."""

CREATED_BY = "consortium records import"


def default_root() -> Path:
    return Path(os.environ.get("CONSORTIUM_REAL_OUTPUTS", "../shared/data"))


def _gsm8k(root: Path) -> list[Part]:
    rr, ms, mot = (
        root / "rereading/results",
        root / "modelswitch/Results/GSM8K/MS/closed_source",
        root / "mot-cascade",
    )
    files = [
        ("gsm_topp1.0_temp0.0_majority1_20230828_141934.jsonl", "text-davinci-003"),
        ("gsm_topp1.0_temp0.0_majority1_20230828_1157.jsonl", "gpt-3.5-turbo"),
        (
            "gsm_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_221724.jsonl",
            "gpt-4o-mini-2024-07-18",
        ),
    ]
    parts = [
        Part(read_rereading(rr / name, model, "cot"), *REREADING, root) for name, model in files
    ]
    parts += [
        Part(read_modelswitch(ms / f"{model}.json", model), *MODELSWITCH, root)
        for model in ("gpt-4o", "gemini-1.5-pro")
    ]
    parts.append(Part(read_motcascade(mot / "GPT4_result/gsm_cot1.json", "gpt-4"), *MOT, root))
    parts.append(
        Part(read_motcascade(mot / "llama2_13B_result/gsm_pot1.json", "Llama-2-13B"), *MOT, root)
    )
    return parts


def _math(root: Path) -> list[Part]:
    ms = root / "modelswitch/Results/MATH/MS"
    return [
        Part(read_modelswitch(ms / "closed_source/gpt-4o.json", "gpt-4o"), *MODELSWITCH, root),
        Part(
            read_modelswitch(ms / "closed_source/gemini-1.5-pro.json", "gemini-1.5-pro"),
            *MODELSWITCH,
            root,
        ),
        Part(read_modelswitch(ms / "open_source/results_70B.json"), *MODELSWITCH, root),
    ]


def _humaneval(root: Path) -> list[Part]:
    return [
        Part(read_humaneval_runs(root / "humaneval-runs" / model), *HUMANEVAL_RUNS, root)
        for model in ("gpt-4", "gpt-3.5-turbo", "codellama-34b-instruct")
    ]


def _date(root: Path) -> list[Part]:
    mot = root / "mot-cascade"
    return [
        Part(read_motcascade(mot / f"{folder}/date_cot1.json", model), *MOT, root)
        for folder, model in (
            ("GPT3_result", "gpt-3.5-turbo"),
            ("GPT4_result", "gpt-4"),
            ("llama2_13B_result", "Llama-2-13B"),
        )
    ]


def _routerbench(name: str) -> Callable[[Path], list[Part]]:
    def parts(root: Path) -> list[Part]:
        folder = root / "routerdc/routerbench_zs"
        tests = None
        if name == "mbpp":
            mbpp = root / "benchmarks/mbpp/mbpp.jsonl"
            if not mbpp.is_file():
                raise RecordsError(f"MBPP tests not found: {mbpp} (RouterBench stores none)")
            tests = load_mbpp_tests(mbpp)
        return [
            Part(
                read_routerbench(folder / f"{name}_{split}.csv", mbpp_tests=tests), *ROUTERDC, root
            )
            for split in ("train", "test")
        ]

    return parts


def _split2(name: str, choice: bool) -> Callable[[Path], list[Part]]:
    def parts(root: Path) -> list[Part]:
        folder = root / "routerdc/split2_model7"
        files = [
            (file, prefix)
            for sep in ("_", "-")
            for file, prefix in (
                (f"{name}{sep}train.json", "train/"),
                (f"{name}{sep}test.json", "test/"),
            )
            if (folder / file).exists()
        ] or [(f"{name}.json", "")]
        return [
            Part(read_split2(folder / file, choice=choice, prefix=prefix), *ROUTERDC, root)
            for file, prefix in files
        ]

    return parts


_RB = "RouterBench (withmartian/routerbench, no licence stated) via RouterDC: " + NO_GRANT
RECIPES: dict[str, Recipe] = {
    "gsm8k": Recipe(
        "gsm8k",
        "number",
        "rereading: Apache-2.0; mot-cascade, modelswitch: " + NO_GRANT + "; GSM8K: MIT",
        _gsm8k,
        (
            "text-davinci-003, gpt-3.5-turbo, gpt-4o-mini: Re2 repo, baseline (read once), CoT "
            "method, 1 sample; gpt-4: MoT-cascade gsm_cot1 (3 samples); Llama-2-13B: MoT-cascade "
            "gsm_pot1 (24 program-of-thought samples, first 400 questions; programs run in the "
            "sandbox and their printed `ans` graded)",
            "question ids are GSM8K test indices (rereading id = modelswitch no = mot-cascade row)",
        ),
    ),
    "math": Recipe(
        "math",
        "latex",
        "modelswitch: " + NO_GRANT + "; MATH: MIT",
        _math,
        ("the 700-question MATH subset of ModelSwitch; question id = its `no`",),
    ),
    "humaneval": Recipe(
        "humaneval",
        "code",
        "humaneval-runs: " + NO_GRANT + "; HumanEval: MIT",
        _humaneval,
        ("10 runs per task at temperature 0.2; reference = the unit tests of the task",),
    ),
    "date": Recipe(
        "date",
        "date",
        "mot-cascade: " + NO_GRANT + "; BIG-bench date understanding: Apache-2.0",
        _date,
        (
            "MoT-cascade date_cot1 (CoT, prompt set 1): gpt-3.5-turbo 20, gpt-4 3, Llama-2-13B 20 "
            "samples; question id = row index",
        ),
    ),
    "rb_arc_challenge": Recipe("rb_arc_challenge", "choice", _RB, _routerbench("arc_challenge")),
    "rb_mbpp": Recipe(
        "rb_mbpp",
        "code",
        _RB + "; MBPP: CC BY 4.0",
        _routerbench("mbpp"),
        (
            "our verdict runs the MBPP task's tests (joined on the text) on the response's code; "
            "RouterBench's prompt did not show the tests, so the models chose their own "
            "function names: when the tests call a name the code does not define, that name is "
            "bound to the code's last top-level function (records.grading.bind_tested_name)",
        ),
    ),
    "rb_winogrande": Recipe("rb_winogrande", "choice", _RB, _routerbench("winograde")),
}
for _name, _choice in (
    ("gsm8k", False),
    ("humaneval", False),
    ("mmlu", True),
    ("cmmlu", True),
    ("arc_challenge", True),
    ("arc_easy", True),
    ("MATH_prealgebra", False),
    ("mbpp", False),
    ("ceval", True),
    ("javascript", False),
):
    RECIPES[f"split2_{_name.lower()}"] = Recipe(
        f"split2_{_name.lower()}",
        "text",
        "RouterDC: " + NO_GRANT,
        _split2(_name, _choice),
        ("RouterDC scores only (no texts, no gold): source_score per model",),
    )
BY_DEFAULT = tuple(RECIPES)
"""What `records import` (`make records`) imports without `--only`: every corpus of single
outputs. The recorded debates (FORD_RECIPES) are imported by name, by `make debates`."""
RECIPES.update(FORD_RECIPES)


def import_corpus(
    name: str,
    root: Path | None = None,
    *,
    limit: int | None = None,
    progress: Progress | None = None,
) -> tuple[Manifest, list[OutputRow]]:
    if name not in RECIPES:
        raise RecordsError(f"unknown corpus {name!r}; known: {', '.join(RECIPES)}")
    return import_recipe(RECIPES[name], root, limit=limit, progress=progress)


def import_recipe(
    recipe: Recipe,
    root: Path | None = None,
    *,
    limit: int | None = None,
    progress: Progress | None = None,
) -> tuple[Manifest, list[OutputRow]]:
    root = root or default_root()
    if not root.is_dir():
        raise RecordsError(f"real-outputs folder not found: {root} (set CONSORTIUM_REAL_OUTPUTS)")
    manifest, rows = build_dataset(
        recipe.dataset,
        recipe.kind,
        recipe.parts(root),
        licence=recipe.licence,
        created_by=CREATED_BY,
        notes=recipe.notes,
        progress=progress,
        limit=limit,
    )
    return manifest.model_copy(update={"protocol": recipe.protocol}), rows


def is_project_corpus(manifest: Manifest) -> bool:
    """Whether `manifest` is of a whole corpus `records import` builds from the real-outputs
    folder: a recipe's data set, made by the import from the repositories the recipes read (at
    their commits), no question limit. A user's own records of the same name are not."""
    return (
        manifest.dataset in RECIPES
        and manifest.created_by == CREATED_BY
        and bool(manifest.sources)
        and all((source.repo, source.commit) in SOURCES for source in manifest.sources)
        and not any(note.startswith(LIMITED) for note in manifest.notes)
    )
