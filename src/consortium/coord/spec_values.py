"""The values inside a `--policy` spec (`conductor:…`, `workflow:…`, `debate:…`): its `key=value`
options, an integer option, a list of pool models, an answer kind, and the pool's name for a
policy's model; each refused with one line that quotes the spec."""

from __future__ import annotations

from consortium.core.errors import ConfigError
from consortium.pool.config import PoolConfig
from consortium.records.schema import AnswerKind, answer_kind_named


def spec_options(text: str, parts: list[str], allowed: set[str]) -> dict[str, str]:
    """`key=value` parts of spec `text`; one line listing the allowed keys for any other."""
    options: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in allowed:
            raise ConfigError(
                f"--policy {text!r}: {part!r} is not one of "
                f"{', '.join(f'{k}=…' for k in sorted(allowed))}"
            )
        options[key] = value
    return options


def int_option(text: str, options: dict[str, str], key: str, default: int) -> int:
    try:
        return int(options.get(key, default))
    except ValueError:
        raise ConfigError(f"--policy {text!r}: {key} must be an integer") from None


def pool_models(config: PoolConfig, value: str | None, default: list[str]) -> list[str]:
    """The models `a,b,c` names (each in the pool), or `default` when none are named."""
    if value is None:
        return default
    names = [name for name in value.split(",") if name]
    for name in names:
        config.get(name)  # UnknownModelError lists the pool
    return names


def answer_kind(given: str | None, where: str) -> AnswerKind | None:
    """The answer kind `given` names (None: the task's own); one line naming `where` when it is
    not one."""
    return None if given is None else answer_kind_named(given, where)


def pool_name(config: PoolConfig, model: str) -> str:
    """The pool's name for a policy's model: the entry of that name, else the one entry that
    serves that endpoint model id (a records model `meta/llama-2-70b-chat` is the pool's
    `llama-2-70b-chat`); else UnknownModelError, one line naming the model."""
    if model in config.names:
        return model
    serving = [entry.name for entry in config.models if entry.model == model]
    if len(serving) == 1:
        return serving[0]
    return config.get(model).name  # raises, naming the model and the pool's
