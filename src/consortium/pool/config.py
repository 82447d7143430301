"""Pool configuration: a TOML file listing the models a consortium may call.

```toml
[[models]]
name = "gpt-4o"                     # how Consortium refers to it
base_url = "https://api.openai.com/v1"
model = "gpt-4o-2024-08-06"         # the id sent to the endpoint
api_key_env = "OPENAI_API_KEY"      # the key is read from this variable; never stored
price_in = 2.5                      # USD per million input tokens
price_out = 10.0                    # USD per million output tokens
max_concurrency = 8
timeout = 60.0
strengths = "strong at code and math"

[[models]]                          # an in-process Hugging Face causal LM (e.g. a conductor)
name = "conductor-7b"
backend = "local"
model = "/models/conductor-7b"      # a directory written by save_pretrained
```
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, model_validator

from consortium.core.errors import ConfigError, UnknownModelError

DEFAULT_MAX_TOKENS = 1024
"""A call's `max_tokens` where neither the pool file nor the caller sets one."""


class ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    backend: Literal["openai", "local"] = "openai"
    """openai: an OpenAI-compatible endpoint at base_url; local: `model` is a transformers
    directory (or hub id) run in this process."""
    base_url: HttpUrl | None = None
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    price_in: float = Field(default=0.0, ge=0)
    price_out: float = Field(default=0.0, ge=0)
    max_concurrency: int = Field(default=8, ge=1)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    circuit_failures: int = Field(default=5, ge=1)
    """Failed calls in a row after which the model is skipped for `circuit_cooldown` seconds."""
    circuit_cooldown: float = Field(default=30.0, ge=0)
    fallback: str | None = None
    """Another model of the pool that answers when this one fails (after its retries, or while
    its circuit is open); the trace records the substitution."""
    strengths: str | None = None

    @model_validator(mode="after")
    def _endpoint(self) -> ModelConfig:
        if self.backend == "openai" and self.base_url is None:
            raise ValueError("base_url is required for an OpenAI-compatible endpoint")
        return self

    def api_key(self) -> str:
        """The key from the environment; a clear error when the variable is missing."""
        if self.api_key_env is None:
            return "not-needed"
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(
                f"model {self.name!r}: environment variable {self.api_key_env} is not set "
                "(it holds the API key; set it or remove api_key_env for keyless endpoints)"
            )
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.price_in + completion_tokens * self.price_out) / 1e6


class PoolConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[ModelConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> PoolConfig:
        seen: set[str] = set()
        for entry in self.models:
            if entry.name in seen:
                raise ValueError(f"model name {entry.name!r} appears twice")
            seen.add(entry.name)
        for entry in self.models:
            if entry.fallback is not None and entry.fallback not in seen:
                raise ValueError(
                    f"model {entry.name!r}: fallback {entry.fallback!r} is not a model of this pool"
                )
            if entry.fallback == entry.name:
                raise ValueError(f"model {entry.name!r}: a model cannot be its own fallback")
        return self

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.models]

    def get(self, name: str) -> ModelConfig:
        for entry in self.models:
            if entry.name == name:
                return entry
        raise UnknownModelError(name, self.names)


def _describe(error: ValidationError, data: dict[str, object]) -> str:
    first = error.errors()[0]
    loc = list(first["loc"])
    parts: list[str] = []
    models = data.get("models")
    for i, key in enumerate(loc):
        if key == "models" and i + 1 < len(loc) and isinstance(loc[i + 1], int):
            index = loc[i + 1]
            assert isinstance(index, int)
            label = f"models[{index}]"
            entry = models[index] if isinstance(models, list) and index < len(models) else None
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                label += f" ({entry['name']})"
            parts.append(label)
        elif isinstance(key, int) and i > 0 and loc[i - 1] == "models":
            continue
        else:
            parts.append(str(key))
    message = str(first["msg"]).removeprefix("Value error, ")  # pydantic's prefix for ValueError
    return f"{'.'.join(parts)}: {message}" if parts else message


def parse_pool(data: dict[str, object], source: str = "pool") -> PoolConfig:
    try:
        return PoolConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: {_describe(error, data)}") from None


def load_pool(path: str | Path) -> PoolConfig:
    """Read and validate a pool file; every problem becomes one ConfigError naming the field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"pool file not found: {path}") from None
    except OSError as error:
        raise ConfigError(f"cannot read pool file {path}: {error.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    return parse_pool(data, str(path))


def dump_pool(pool: PoolConfig) -> str:
    """TOML text of a pool, for `replay serve --write-pool`."""
    lines: list[str] = []
    for entry in pool.models:
        lines.append("[[models]]")
        for key, value in entry.model_dump(exclude_none=True).items():
            if isinstance(value, str) or key == "base_url":
                escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'{key} = "{escaped}"')
            else:
                lines.append(f"{key} = {value}")
        lines.append("")
    return "\n".join(lines)
