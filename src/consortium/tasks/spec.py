"""The `--tasks` spec string: `NAME:key=value:…`, e.g. `replay:datasets=gsm8k,mmlu:limit=100`."""

from __future__ import annotations

from dataclasses import dataclass

from consortium.core.errors import TaskSpecError


@dataclass(frozen=True)
class TaskSpec:
    name: str
    options: dict[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)

    def get_int(self, key: str, default: int | None = None) -> int | None:
        value = self.options.get(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise TaskSpecError(
                f"--tasks {self.name}: {key} must be an integer, got {value!r}"
            ) from None

    def get_list(self, key: str) -> list[str] | None:
        value = self.options.get(key)
        return [v for v in value.split(",") if v] if value else None

    def check_keys(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.options) - allowed)
        if unknown:
            raise TaskSpecError(
                f"--tasks {self.name}: unknown option {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )


def parse_spec(text: str) -> TaskSpec:
    name, _, rest = text.strip().partition(":")
    if not name:
        raise TaskSpecError(f"--tasks {text!r}: expected NAME[:key=value…]")
    options: dict[str, str] = {}
    for part in rest.split(":") if rest else []:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise TaskSpecError(f"--tasks {text!r}: {part!r} is not key=value")
        options[key.strip()] = value.strip()
    return TaskSpec(name, options)
