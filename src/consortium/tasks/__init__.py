"""Benchmarks and graders: the external verifiers."""

from consortium.tasks.base import Grade, Grader, Task

__all__ = ["Grade", "Grader", "Task"]
