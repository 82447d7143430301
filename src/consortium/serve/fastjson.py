"""JSON in and out of `serve` by orjson where it is installed (the `json` module otherwise):
about a tenth of the request's CPU went to encoding and decoding bodies with `json`."""

from __future__ import annotations

import importlib
import json
from typing import Any

from starlette.responses import JSONResponse


def _orjson() -> Any:
    try:
        return importlib.import_module("orjson")
    except ImportError:  # the standard library reads and writes the same JSON, slower
        return None


orjson = _orjson()


def loads(data: bytes) -> Any:
    """Raises ValueError (or UnicodeDecodeError) on a body that is not JSON, as `json` does."""
    if orjson is not None:
        return orjson.loads(data)  # orjson.JSONDecodeError is a ValueError
    return json.loads(data)


class FastJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        if orjson is not None:
            encoded: bytes = orjson.dumps(content)
            return encoded
        return super().render(content)
