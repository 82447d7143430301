"""Resolve a `--tasks` spec to tasks and their grader."""

from __future__ import annotations

from consortium.core import plugins
from consortium.core.errors import TaskSpecError
from consortium.tasks.arithmetic import arithmetic_tasks
from consortium.tasks.base import Grader, TaskSet
from consortium.tasks.choice import ChoiceGrader
from consortium.tasks.code import CodeGrader
from consortium.tasks.forms import ARITHMETIC, BENCHMARK, known_names
from consortium.tasks.loaders import FORMATS, build_tasks, read_hf, read_rows
from consortium.tasks.math import MathGrader
from consortium.tasks.spec import TaskSpec, parse_spec


def _grader(kind: str) -> Grader:
    if kind in ("gsm8k", "math"):
        return MathGrader()
    if kind in ("humaneval", "mbpp"):
        return CodeGrader()
    return ChoiceGrader()


def _benchmark(spec: TaskSpec) -> TaskSet:
    spec.check_keys(BENCHMARK.keys)
    split = spec.get("split", "test") or "test"
    path, hf = spec.get("path"), spec.get("hf")
    if bool(path) == bool(hf):
        raise TaskSpecError(
            f"--tasks {spec.name}: give exactly one of path=FILE or hf=DATASET, e.g. "
            f"{spec.name}:path=FILE.jsonl:limit=100 (docs/graders.md lists each format)"
        )
    rows = read_rows(path) if path else read_hf(str(hf), split, spec.get("config"))
    tasks = build_tasks(
        spec.name, rows, split=split, limit=spec.get_int("limit"), seed=spec.get_int("seed", 0) or 0
    )
    if not tasks:
        raise TaskSpecError(f"--tasks {spec.name}: no tasks in {path or hf} (split {split})")
    return TaskSet(tasks, _grader(spec.name), f"{spec.name} from {path or 'hf:' + str(hf)}")


def load_task_set(text: str) -> TaskSet:
    """`replay:…` for recorded outcomes, `arithmetic:n=100:seed=0` for generated questions, or a
    benchmark file: gsm8k, math, humaneval, mbpp, mc."""
    spec = parse_spec(text)
    if spec.name in FORMATS:
        return _benchmark(spec)
    if spec.name == "arithmetic":
        spec.check_keys(ARITHMETIC.keys)
        n, seed = spec.get_int("n", 100) or 100, spec.get_int("seed", 0) or 0
        return TaskSet(
            arithmetic_tasks(n, seed), MathGrader(), f"{n} arithmetic questions (seed {seed})"
        )
    if spec.name in plugins.TASK_SETS:
        task_set: TaskSet = plugins.load(plugins.TASK_SETS[spec.name])(spec)
        return task_set
    raise TaskSpecError(
        f"--tasks: unknown task set {spec.name!r}; known: {', '.join(known_names())}"
    )
