"""Plain data that crosses module boundaries: messages, usage, completions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

Role = Literal["system", "user", "assistant"]


class Message(TypedDict):
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """True when the endpoint reported no usage (e.g. llama.cpp's server when streaming) and the
    counts are estimates: prompt by characters, completion by streamed chunks."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer from one backend call."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    finish_reason: str | None = None
    cached: bool = False


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def system(content: str) -> Message:
    return {"role": "system", "content": content}
