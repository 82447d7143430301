"""The Conductor: a model writes the workflow (subtasks, workers, access lists); a DAG executor
runs it."""

from consortium.coord.conductor.executor import WorkflowExecutor, WorkflowRun
from consortium.coord.conductor.policy import ConductorCoordinator
from consortium.coord.conductor.templates import WorkflowCoordinator
from consortium.coord.conductor.workflow import Workflow, WorkflowError, parse_workflow

__all__ = [
    "ConductorCoordinator",
    "Workflow",
    "WorkflowCoordinator",
    "WorkflowError",
    "WorkflowExecutor",
    "WorkflowRun",
    "parse_workflow",
]
