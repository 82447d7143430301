"""Generated two-number arithmetic questions: a task set that needs no file and that even a
135M-parameter model sometimes gets right, so real-model runs have a learning signal."""

from __future__ import annotations

import random

from consortium.tasks.base import Task

OPERATIONS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def arithmetic_tasks(n: int, seed: int = 0, largest: int = 50) -> list[Task]:
    """`n` questions like "What is 17 + 25?" with operands in [0, largest], seeded."""
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        a, b = rng.randint(0, largest), rng.randint(0, largest)
        symbol = rng.choice(list(OPERATIONS))
        question = f"What is {a} {symbol} {b}? End with 'The answer is …'."
        tasks.append(
            Task(
                f"arithmetic-{seed}-{i}",
                question,
                "arithmetic",
                "test",
                str(OPERATIONS[symbol](a, b)),
            )
        )
    return tasks
