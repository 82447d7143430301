"""The conductor's prompt: the pool as "Model 0..k", the tool workers it may use, the format,
and four example workflows.

The examples are deliberately outside the benchmarks' domains (the paper found out-of-domain
few-shots best); they use a pool of their own and say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from consortium.coord.conductor.executor import RecursionRequest
from consortium.coord.conductor.tools import DESCRIPTIONS, WITHOUT_SCORER
from consortium.core.types import Message, system, user

EXAMPLES = (
    (
        "Write a function that returns the longest palindromic substring of a string.",
        "Two independent attempts, then a careful reviewer who sees both.",
        'model_id = [1, 2, 0]\nsubtasks = ["Write a correct, efficient Python function that '
        'returns the longest palindromic substring. Return only the code.", "Solve the same task '
        'independently with a different algorithm. Return only the code.", "Two candidate '
        "solutions are above. Test them mentally on edge cases (empty string, one character, "
        'even-length palindromes), fix any bug, and return the single best final function."]\n'
        'access_list = [[], [], "all"]',
    ),
    (
        "Which gas makes up most of the Earth's atmosphere?",
        "A direct fact: one strong model is enough.",
        "model_id = [0]\nsubtasks = [\"Answer the question directly and end with 'The answer "
        "is …'.\"]\naccess_list = [[]]",
    ),
    (
        "A train leaves at 9:40 and arrives at 13:05 after two stops of 12 minutes. How long "
        "was it moving?",
        "Plan, solve with the plan, then verify the arithmetic.",
        'model_id = [2, 0, 1]\nsubtasks = ["List the quantities and the steps needed to solve '
        'this, without computing the result.", "Follow the plan above and compute the answer; end '
        "with 'The answer is …'.\", \"Check the computation above step by step. If it is right, "
        "restate the final answer; if not, correct it. End with 'The answer is …'.\"]\n"
        "access_list = [[], [0], [1]]",
    ),
    (
        "Is it ethical for a self-driving car to prioritise its passengers over pedestrians?",
        "Two opposing arguments, then a balanced synthesis that sees both.",
        'model_id = [1, 2, 0]\nsubtasks = ["Argue that it can be ethical, with your strongest '
        'reasons.", "Argue that it is not ethical, with your strongest reasons.", "Weigh the two '
        'arguments above and give a balanced, well-reasoned answer to the question."]\n'
        "access_list = [[], [], [0, 1]]",
    ),
)


def describe_workers(
    workers: Sequence[str], strengths: Mapping[str, str | None], conductor: str | None
) -> str:
    lines = []
    for index, name in enumerate(workers):
        note = strengths.get(name)
        lines.append(f"- Model {index}" + (f": {note}" if note else ""))
    if conductor is not None:
        lines.append(
            f"- Model {len(workers)}: yourself, the Conductor. A step given to you writes a "
            "further workflow that sees the outputs its access list names."
        )
    return "\n".join(lines)


def describe_tools(tools: Sequence[str], n_workers: int) -> str:
    """The tools as the prompt offers them, with an example over this prompt's own workers (""
    when no tool is offered)."""
    if not tools or n_workers < 1:
        return ""
    listed = "\n".join(f'- "{tool}": {DESCRIPTIONS[tool]}' for tool in tools)
    first = tools[0]
    ids = ", ".join(str(i % n_workers) for i in range(3))
    return (
        "\n\nTools: besides the models, a step may be one of these tools, written by name in "
        "model_id. A tool calls no model and costs nothing: it returns, word for word, the answer "
        "of one of the steps its access list names (at least one earlier step); its subtask is "
        f'not used (write "").\n{listed}\n'
        f'For example: model_id = [{ids}, "{first}"], subtasks = ["Solve it.", "Solve it.", '
        f'"Solve it.", ""], access_list = [[], [], [], "all"].'
    )


def system_prompt(
    workers: Sequence[str],
    strengths: Mapping[str, str | None],
    *,
    conductor: str | None = None,
    max_steps: int = 5,
    tools: Sequence[str] = WITHOUT_SCORER,
    examples: bool = True,
) -> str:
    """`examples=False` leaves out the four example workflows: a conductor fine-tuned on the
    format needs none, and a prompt a quarter as long makes CPU training four times cheaper."""
    shown = "\n\n".join(
        f"Example {n} (another pool: Model 0 strongest, Model 2 fastest)\nQuestion: {question}\n"
        f"<think>{why}</think>\n{workflow}"
        for n, (question, why, workflow) in enumerate(EXAMPLES if examples else (), 1)
    )
    return (
        "You are the Conductor of a team of language models. You do not answer questions "
        "yourself: you write a short workflow in which the team's models (the workers) answer "
        "them.\n\n"
        f"The workers:\n{describe_workers(workers, strengths, conductor)}"
        f"{describe_tools(tools, len(workers))}\n\n"
        "Think briefly inside <think>…</think>, then write exactly three Python lists of equal "
        "length, one entry per step:\n"
        "model_id = [...]     # the worker of each step, by number (a tool by name)\n"
        "subtasks = [...]     # the instruction each worker gets (it also sees the question)\n"
        'access_list = [...]  # per step: "all" (every earlier step), [] (none) or a list of '
        "earlier step numbers whose instruction and answer the worker sees\n\n"
        f"Rules: at most {max_steps} steps; steps are numbered from 0; a step may see only "
        "earlier steps; steps that see nothing of each other run at the same time. The last "
        "step's answer is returned to the user, so the last step must give the complete final "
        "answer." + (f"\n\n{shown}" if shown else "")
    )


def conductor_messages(
    question: str,
    workers: Sequence[str],
    strengths: Mapping[str, str | None],
    *,
    conductor: str | None = None,
    max_steps: int = 5,
    context: RecursionRequest | None = None,
    tools: Sequence[str] = WITHOUT_SCORER,
    examples: bool = True,
) -> list[Message]:
    request = f"Question: {question}"
    if context is not None:
        roster = list(workers)
        seen = "\n\n".join(f"[step {r.step.index}] {r.output}" for r in context.visible)
        request += (
            "\n\nA workflow already ran on this question:\n"
            f"{context.parent.to_text(roster)}\n\n"
            f"Its results that you may see:\n{seen or '(none)'}\n\n"
            "Write a workflow that improves on the latest result, or write three empty lists "
            "(model_id = [], subtasks = [], access_list = []) to keep the latest result as the "
            "answer."
        )
    return [
        system(
            system_prompt(
                workers,
                strengths,
                conductor=conductor,
                max_steps=max_steps,
                tools=tools,
                examples=examples,
            )
        ),
        user(request),
    ]
