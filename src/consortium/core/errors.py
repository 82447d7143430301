"""Errors a user can act on: one clear message each, printed by the CLI without a traceback.

ConsortiumError
├── ConfigError            a pool, run or task configuration is malformed
│   ├── UnknownModelError  a model name the pool does not have
│   ├── TaskSpecError      a --tasks spec that cannot be understood
│   └── ProcessStartError  a child process (a server, the sandbox's runner) did not start
├── CoordinatorError       a policy cannot be built or run as asked
│   └── WorkflowError      a conductor's workflow cannot be run (coord.conductor.workflow)
├── AgentError             a backend call failed after its retries
├── ClusterError           a remote executor lost work (a node died) after its retries
└── BudgetExceeded         a call refused before it was made
"""


class ConsortiumError(Exception):
    """Base class of every error Consortium raises on purpose."""


class ConfigError(ConsortiumError):
    """A pool, run or task configuration is malformed or incomplete."""


class UnknownModelError(ConfigError):
    """A model name is not in the pool."""

    def __init__(self, name: str, known: list[str]) -> None:
        shown = ", ".join(known[:12]) + (" …" if len(known) > 12 else "")
        super().__init__(f"unknown model {name!r}; the pool has: {shown}")
        self.name = name


class CoordinatorError(ConsortiumError, ValueError):
    """A policy cannot be built or run as asked (no workers, a head that does not fit the pool …).
    Also a ValueError: these are refused arguments."""


class AgentError(ConsortiumError):
    """A backend call failed after its retries (HTTP error, timeout, bad response)."""

    def __init__(
        self, model: str, message: str, *, status: int | None = None, kind: str | None = None
    ) -> None:
        super().__init__(f"model {model!r}: {message}")
        self.model = model
        self.status = status
        self.kind = kind or (f"HTTP {status}" if status is not None else "failed")
        """What went wrong in a few words (`HTTP 503`, `timeout`, `unreachable` …), without the
        endpoint's own message: what a server's log may show (an endpoint's 401 message can
        quote part of the key it was sent)."""


class ClusterError(ConsortiumError):
    """A remote executor lost work after its retries (a node died, a worker crashed)."""


class BudgetExceeded(ConsortiumError):
    """A call was refused before it was made because it could exceed a cap."""


class TaskSpecError(ConfigError):
    """A --tasks spec string cannot be understood."""


class ProcessStartError(ConfigError):
    """A child process exited before it was ready, or was not ready in time (core/process.py):
    its label, exit code and last lines of output, or the timeout."""

    def __init__(
        self,
        label: str,
        *,
        exit_code: int | None = None,
        timeout: float | None = None,
        last_lines: list[str] | None = None,
        log: object = None,
    ) -> None:
        self.label = label
        self.exit_code = exit_code
        self.timeout = timeout
        self.last_lines = list(last_lines or [])
        said = " | ".join(self.last_lines)
        if timeout is None:
            message = f"{label} exited at start (exit code {exit_code})"
        else:
            message = f"{label} did not start within {timeout:g}s"
        if log is not None:
            message += f" (log: {log})"
        super().__init__(message + (f": {said}" if said else ""))


def reason(error: BaseException) -> str:
    """Why something failed, as stored and printed: the error's type, then its message (a
    workflow error's message names its step and field)."""
    return f"{type(error).__name__}: {error}"
