from __future__ import annotations

from pathlib import Path

import pytest

from consortium.core.errors import ConfigError, UnknownModelError
from consortium.pool.config import dump_pool, load_pool, parse_pool

GOOD = """
[[models]]
name = "fast"
base_url = "http://127.0.0.1:8000/v1"
model = "meta-llama/Llama-3-8B"
price_in = 0.2
price_out = 0.4
max_concurrency = 4
timeout = 20
strengths = "cheap"

[[models]]
name = "strong"
base_url = "https://api.openai.com/v1"
model = "gpt-4o"
api_key_env = "CONSORTIUM_TEST_KEY"
"""


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "pool.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_good_pool_loads_with_defaults(tmp_path: Path) -> None:
    pool = load_pool(write(tmp_path, GOOD))
    assert pool.names == ["fast", "strong"]
    fast = pool.get("fast")
    assert fast.max_concurrency == 4 and fast.timeout == 20
    assert fast.cost(1_000_000, 500_000) == pytest.approx(0.2 + 0.2)
    assert pool.get("strong").max_concurrency == 8  # default


def test_dump_pool_round_trips(tmp_path: Path) -> None:
    pool = load_pool(write(tmp_path, GOOD))
    assert load_pool(write(tmp_path, dump_pool(pool))) == pool


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace('name = "fast"\n', ""), "models[0].name: Field required"),
        (GOOD.replace('"http://127.0.0.1:8000/v1"', '"not a url"'), "models[0] (fast).base_url"),
        (GOOD.replace("price_in = 0.2", "price_in = -1"), "models[0] (fast).price_in"),
        (GOOD.replace("max_concurrency = 4", "max_concurrency = 0"), "max_concurrency"),
        (GOOD.replace("timeout = 20", 'timeout = "soon"'), "models[0] (fast).timeout"),
        (GOOD.replace('strengths = "cheap"', 'colour = "red"'), "models[0] (fast).colour"),
        (GOOD.replace('name = "strong"', 'name = "fast"'), "model name 'fast' appears twice"),
        ("models = []", "models: List should have at least 1 item"),
        (
            GOOD.replace('strengths = "cheap"', 'fallback = "z"'),
            "pool.toml: model 'fast': fallback 'z' is not a model of this pool",
        ),
        ("[[models]\nname=", "invalid TOML"),
    ],
)
def test_bad_pool_names_the_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_pool(write(tmp_path, text))
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message  # one line
    assert "Value error" not in message and "file:" not in message  # no raw pydantic text


def test_the_docs_pool_file_loads_as_written(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "docs" / "pools.md").read_text()
    block = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    pool = load_pool(write(tmp_path, block))
    assert pool.get("gpt-4o").fallback == "gpt-4o-mini" in pool.names
    assert pool.get("gpt-4o").api_key_env == "OPENAI_API_KEY"


def test_missing_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pool file not found"):
        load_pool(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_pool(write(tmp_path, b"\xff\xfe[[models]]"))


def test_api_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = parse_pool(
        {
            "models": [
                {
                    "name": "m",
                    "base_url": "http://h/v1",
                    "model": "m",
                    "api_key_env": "CONSORTIUM_TEST_KEY",
                }
            ]
        }
    )
    monkeypatch.delenv("CONSORTIUM_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="CONSORTIUM_TEST_KEY is not set"):
        pool.get("m").api_key()
    monkeypatch.setenv("CONSORTIUM_TEST_KEY", "sk-planted")
    assert pool.get("m").api_key() == "sk-planted"
    assert "sk-planted" not in repr(pool)


def test_unknown_model_lists_the_pool(tmp_path: Path) -> None:
    pool = load_pool(write(tmp_path, GOOD))
    with pytest.raises(
        UnknownModelError, match="unknown model 'gpt-5'; the pool has: fast, strong"
    ):
        pool.get("gpt-5")
