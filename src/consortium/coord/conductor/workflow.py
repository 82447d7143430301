"""The Conductor's workflow language: three aligned Python lists in a model's text.

```
model_id = [0, 2, 1]
subtasks = ["Solve the problem.", "Solve it another way.", "Compare both and give the answer."]
access_list = [[], [], "all"]
```

`model_id[i]` names the worker of step i ("Model 0..k" of the prompt, or a pool name),
`subtasks[i]` is its instruction and `access_list[i]` says which earlier steps it sees: `"all"`,
`[]` (none) or a list of earlier step indices. A `model_id` entry may also name a tool
(`"vote"`, `"check"`, `"accept"`, `"select"`: `coord.conductor.tools`): a step that calls no model
and passes on one of the answers it sees; it must see at least one earlier step, and its subtask
is optional. An `accept` step may end the workflow, so every later step waits for it. The lists
are read with `ast.literal_eval` only: nothing in a model's text is ever executed. A
`<think>…</think>` block before the lists is skipped. Every violation is a `WorkflowError`
subclass naming the step and the field.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from consortium.coord.conductor.tools import (
    STOPS,
    SUBTASKS,
    TOOLS,
    WITHOUT_SCORER,
    refuse_tool_names,
    tool_name,
)
from consortium.core.errors import CoordinatorError

FIELDS = ("model_id", "subtasks", "access_list")
MAX_LIST_CHARS = 200_000
"""Longer lists are refused before parsing: no conductor needs them, and they cost memory."""

Access = Literal["all"] | tuple[int, ...]


class WorkflowError(CoordinatorError):
    """A conductor's workflow cannot be run; `step` and `field` say where (when known)."""

    def __init__(self, message: str, *, step: int | None = None, field: str | None = None) -> None:
        where = ", ".join(
            part for part in (f"step {step}" if step is not None else "", field or "") if part
        )
        super().__init__(f"workflow: {where}: {message}" if where else f"workflow: {message}")
        self.step = step
        self.field = field


class WorkflowSyntaxError(WorkflowError):
    """A list is missing, unbalanced or not a Python literal."""


class WorkflowShapeError(WorkflowError):
    """The lists differ in length, are empty, or hold more steps than allowed."""


class WorkflowModelError(WorkflowError):
    """A model id is not a worker of this pool (or the conductor, when recursion is off), nor a
    tool this executor runs."""


class WorkflowSubtaskError(WorkflowError):
    """A subtask is not a non-empty string."""


class WorkflowAccessError(WorkflowError):
    """An access entry is malformed or refers to the step itself or a later one, or a tool step
    sees no earlier step."""


@dataclass(frozen=True, slots=True)
class Step:
    index: int
    model: str
    """Pool name of the worker; the conductor's own name for a recursive step; the tool's name
    for a tool step."""
    subtask: str
    access: Access
    recursive: bool = False
    selects: bool = False
    """A judge: the workflow's answer is the text of the step it picks among those it sees, not
    its own reply (`selection.select_candidate`)."""
    tool: bool = False
    """A tool step (`coord.conductor.tools`): no model call; its output is one visible step's."""

    @property
    def visible(self) -> tuple[int, ...]:
        """Indices of the earlier steps whose subtask and output this step sees."""
        return tuple(range(self.index)) if self.access == "all" else self.access


@dataclass(frozen=True, slots=True)
class Workflow:
    steps: tuple[Step, ...]

    def __len__(self) -> int:
        return len(self.steps)

    def waits_for(self, index: int) -> tuple[int, ...]:
        """The earlier steps step `index` starts after: those it sees, and every earlier step
        that may end the workflow (`tools.STOPS`)."""
        stops = (s.index for s in self.steps[:index] if s.tool and s.model in STOPS)
        return tuple(sorted({*self.steps[index].visible, *stops}))

    def critical_path(self, durations: Sequence[float]) -> float:
        """The longest chain of `durations` through the dependencies: the ideal wall time."""
        finish: list[float] = []
        for step in self.steps:
            start = max((finish[j] for j in self.waits_for(step.index)), default=0.0)
            finish.append(start + durations[step.index])
        return max(finish, default=0.0)

    def to_text(self, roster: Sequence[str], *, by_name: bool = False) -> str:
        """The workflow in the conductor's format, model ids as indices into `roster` (with
        `by_name`: as the models' names, which `parse_workflow` reads alike)."""

        def written_id(step: Step) -> object:
            if step.tool or (by_name and not step.recursive):
                return step.model
            return len(roster) if step.recursive else roster.index(step.model)

        ids = [written_id(s) for s in self.steps]
        subtasks = [s.subtask for s in self.steps]
        access: list[object] = ["all" if s.access == "all" else list(s.access) for s in self.steps]
        return f"model_id = {ids!r}\nsubtasks = {subtasks!r}\naccess_list = {access!r}"


def build(
    models: Sequence[str],
    subtasks: Sequence[str],
    access: Sequence[Access | list[int]],
    *,
    recursive: str | None = None,
    last_selects: bool = False,
) -> Workflow:
    """A workflow from Python values (templates, tests); checked like a parsed one. A model
    named like a tool (`tools.TOOLS`) is that tool's step; its subtask may be empty.
    `last_selects`: the last step is a judge whose pick, not its reply, is the answer."""
    if not len(models) == len(subtasks) == len(access):
        raise WorkflowShapeError("models, subtasks and access differ in length")
    steps = []
    for index, (model, subtask, entry) in enumerate(zip(models, subtasks, access, strict=True)):
        tool = tool_name(model)
        if tool is not None:
            steps.append(_tool_step(index, tool, subtask, _access(entry, index)))
            continue
        steps.append(
            Step(
                index,
                model,
                subtask,
                _access(entry, index),
                recursive=recursive is not None and model == recursive,
                selects=last_selects and index == len(models) - 1,
            )
        )
    return Workflow(tuple(steps))


def _tool_step(index: int, tool: str, subtask: object, access: Access) -> Step:
    """A tool step, checked: it must see at least one earlier step."""
    if access == () or (access == "all" and index == 0):
        raise WorkflowAccessError(
            f"the tool {tool!r} combines the answers of earlier steps, so its access list must "
            "name at least one",
            step=index,
            field="access_list",
        )
    given = subtask.strip() if isinstance(subtask, str) else ""
    return Step(index, tool, given or SUBTASKS[tool], access, tool=True)


_THINK_END = re.compile(r"</think\s*>", re.IGNORECASE)


def _body(text: str) -> str:
    """The text after the last `</think>` (all of it when there is none)."""
    ends = list(_THINK_END.finditer(text))
    return text[ends[-1].end() :] if ends else text


def _list_source(body: str, name: str) -> str:
    """The source of the last `name = [...]` (or `"name": [...]`) in `body`."""
    pattern = re.compile(r"""["']?\b""" + name + r"""\b["']?\s*[:=]\s*\[""")
    matches = list(pattern.finditer(body))
    if not matches:
        raise WorkflowSyntaxError(f"no `{name} = [...]` list found", field=name)
    start = matches[-1].end() - 1
    depth = 0
    quote: str | None = None
    escaped = False
    limit = min(len(body), start + MAX_LIST_CHARS)
    for position in range(start, limit):
        char = body[position]
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return body[start : position + 1]
    if limit < len(body):
        raise WorkflowSyntaxError(f"list longer than {MAX_LIST_CHARS:,} characters", field=name)
    raise WorkflowSyntaxError("list is not closed (missing ']')", field=name)


def _literal(source: str, name: str) -> list[object]:
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as error:
        reason = type(error).__name__
        raise WorkflowSyntaxError(f"not a Python literal list ({reason})", field=name) from None
    if not isinstance(value, list):
        raise WorkflowSyntaxError("not a list", field=name)
    return value


def _tool(value: object, index: int, tools: Sequence[str]) -> str | None:
    """The tool a `model_id` entry names (None: it names no tool); a tool this executor does not
    run is an error."""
    if not isinstance(value, str):
        return None
    tool = tool_name(value)
    if tool is None or tool in tools:
        return tool
    if tool == "select":
        reason = "needs a learned answer scorer, and none was given"
    else:
        reason = "is not offered here"
    raise WorkflowModelError(
        f"the tool {tool!r} {reason} (tools: {', '.join(tools) or 'none'})",
        step=index,
        field="model_id",
    )


def _model(
    value: object, index: int, roster: Sequence[str], conductor: str | None, tools: Sequence[str]
) -> tuple[str, bool]:
    """The step's model name, and whether it is the conductor itself (a recursive step)."""
    names = [*roster, conductor] if conductor is not None else list(roster)
    if isinstance(value, bool):
        raise WorkflowModelError(f"{value!r} is not a model id", step=index, field="model_id")
    if isinstance(value, int):
        if 0 <= value < len(names):
            return names[value], value == len(roster)
        raise WorkflowModelError(
            f"model {value} is out of range (models 0..{len(names) - 1})",
            step=index,
            field="model_id",
        )
    if isinstance(value, str):
        if value in roster:
            return value, False
        if value == conductor:
            return value, True
        recursion = " (recursion is off)" if conductor is None else ""
        offered = f" nor a tool ({', '.join(tools)})" if tools else ""
        raise WorkflowModelError(
            f"{value!r} is not a worker of this pool{recursion}{offered}",
            step=index,
            field="model_id",
        )
    raise WorkflowModelError(
        f"expected a model index or name, got {type(value).__name__}", step=index, field="model_id"
    )


def _access(value: object, index: int) -> Access:
    if isinstance(value, str):
        if value.strip().lower() == "all":
            return "all"
        if value.strip().lower() == "none":
            return ()
        raise WorkflowAccessError(
            f"expected 'all', [] or a list of earlier steps, got {value!r}",
            step=index,
            field="access_list",
        )
    if isinstance(value, list | tuple):
        if len(value) == 1 and isinstance(value[0], str) and value[0].strip().lower() == "all":
            return "all"
        seen: list[int] = []
        for entry in value:
            if isinstance(entry, bool) or not isinstance(entry, int):
                raise WorkflowAccessError(
                    f"expected step indices, got {entry!r}", step=index, field="access_list"
                )
            if entry < 0:
                raise WorkflowAccessError(
                    f"step index {entry} is negative", step=index, field="access_list"
                )
            if entry >= index:
                which = "itself" if entry == index else f"step {entry}, which comes later"
                raise WorkflowAccessError(
                    f"refers to {which}; a step sees only earlier steps",
                    step=index,
                    field="access_list",
                )
            if entry not in seen:
                seen.append(entry)
        return tuple(sorted(seen))
    raise WorkflowAccessError(
        f"expected 'all', [] or a list of earlier steps, got {type(value).__name__}",
        step=index,
        field="access_list",
    )


def written_lists(text: str) -> dict[str, list[object]]:
    """The three lists of a conductor's `text` as written (after its last `</think>`), not yet
    checked against a roster; `WorkflowSyntaxError` when one is missing or not a literal list."""
    body = _body(text)
    return {name: _literal(_list_source(body, name), name) for name in FIELDS}


def parse_workflow(
    text: str,
    roster: Sequence[str],
    *,
    conductor: str | None = None,
    max_steps: int = 5,
    allow_empty: bool = False,
    tools: Sequence[str] = WITHOUT_SCORER,
) -> Workflow:
    """The workflow in a conductor's `text`, with `roster[i]` as "Model i".

    `conductor`: the conductor's own name, selectable as model `len(roster)` (recursion); None
    turns recursion off. `allow_empty`: three empty lists are a valid workflow (an inner
    recursive call passing the previous answer through). `tools`: the tool steps the executor
    runs (`AnswerTools.available`; `select` only with a scorer). A roster with a tool's name
    is refused (`CoordinatorError`): tool names are reserved.
    """
    refuse_tool_names(roster)
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise CoordinatorError(f"unknown workflow tool {unknown[0]!r}; known: {', '.join(TOOLS)}")
    values = written_lists(text)
    lengths = {name: len(value) for name, value in values.items()}
    if len(set(lengths.values())) != 1:
        shown = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise WorkflowShapeError(f"the three lists differ in length ({shown})")
    count = lengths["model_id"]
    if count == 0 and not allow_empty:
        raise WorkflowShapeError("the workflow has no steps")
    if count > max_steps:
        raise WorkflowShapeError(f"{count} steps; at most {max_steps} are allowed")
    steps: list[Step] = []
    for index in range(count):
        tool = _tool(values["model_id"][index], index, tools)
        if tool is not None:
            access = _access(values["access_list"][index], index)
            steps.append(_tool_step(index, tool, values["subtasks"][index], access))
            continue
        model, recursive = _model(values["model_id"][index], index, roster, conductor, tools)
        subtask = values["subtasks"][index]
        if not isinstance(subtask, str) or not subtask.strip():
            raise WorkflowSubtaskError(
                "expected a non-empty instruction string", step=index, field="subtasks"
            )
        access = _access(values["access_list"][index], index)
        steps.append(Step(index, model, subtask.strip(), access, recursive))
    return Workflow(tuple(steps))
