"""The Conductor: a model writes the workflow (subtasks, workers, access lists, tool steps); a DAG
executor runs it."""

from consortium.coord.conductor.executor import WorkflowExecutor, WorkflowRun
from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import WorkflowCoordinator
from consortium.coord.conductor.tools import TOOLS, AnswerTools
from consortium.coord.conductor.workflow import Workflow, WorkflowError, parse_workflow

__all__ = [
    "TOOLS",
    "AnswerTools",
    "ConductorCoordinator",
    "Workflow",
    "WorkflowCoordinator",
    "WorkflowError",
    "WorkflowExecutor",
    "WorkflowRun",
    "parse_workflow",
]
