"""The workers: one `Agent` protocol, and a `Pool` that builds an agent per configured model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from consortium.core.errors import UnknownModelError
from consortium.pool.base import Agent
from consortium.pool.config import ModelConfig, PoolConfig

if TYPE_CHECKING:
    from consortium.pool.openai import OpenAIAgent


def build_agent(config: ModelConfig) -> Agent:
    if config.backend == "local":
        from consortium.pool.local import LocalAgent

        return LocalAgent(config)
    from consortium.pool.openai import OpenAIAgent  # the openai client: 0.5 s to import

    return OpenAIAgent(config)


class Pool:
    """The agents of a pool configuration, by name."""

    def __init__(self, config: PoolConfig, agents: dict[str, Agent] | None = None) -> None:
        self.config = config
        self.agents: dict[str, Agent] = agents or {m.name: build_agent(m) for m in config.models}

    @property
    def names(self) -> list[str]:
        return self.config.names

    def agent(self, name: str) -> Agent:
        try:
            return self.agents[name]
        except KeyError:
            raise UnknownModelError(name, self.names) from None

    def model(self, name: str) -> ModelConfig:
        return self.config.get(name)

    def reloaded(self, config: PoolConfig) -> tuple[Pool, list[Agent]]:
        """A pool of `config` that keeps this pool's agent of every model whose entry is the
        same (its connections, its circuit), and the agents it no longer uses: the caller closes
        them once no call is left on them."""
        kept = {
            entry.name: self.agents[entry.name]
            for entry in config.models
            if entry.name in self.agents and entry in self.config.models
        }
        agents = {m.name: kept.get(m.name) or build_agent(m) for m in config.models}
        retired = [agent for name, agent in self.agents.items() if kept.get(name) is not agent]
        return Pool(config, agents), retired

    async def aclose(self) -> None:
        for agent in self.agents.values():
            await agent.aclose()

    async def __aenter__(self) -> Pool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["Agent", "OpenAIAgent", "Pool"]


def __getattr__(name: str) -> Any:
    """`OpenAIAgent` on first use: a command that calls no endpoint never imports openai."""
    if name == "OpenAIAgent":
        from consortium.pool.openai import OpenAIAgent

        return OpenAIAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
