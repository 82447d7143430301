"""The one interface every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from consortium.core.types import Completion, Message


@runtime_checkable
class Agent(Protocol):
    """A model that answers chat messages. Implementations own retries, timeouts and concurrency."""

    name: str

    async def chat(self, messages: Sequence[Message], **params: Any) -> Completion:
        """Answer `messages`; raise `AgentError` once the backend's retries are spent. A
        callable `on_delta` param receives the answer's text as it is produced (streamed where
        the backend can, else once, whole)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
