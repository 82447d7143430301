"""The replay server over a records folder, through the openai SDK: recorded texts verbatim, the
k-th sample for the k-th ask (by explicit index or by the transcript), the same answer for the
same request, and a typed error when the samples run out."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from consortium.records import write_records
from consortium.records.layouts import import_files
from consortium.replay.launch import ReplayServerProcess

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpt4_file() -> Path:
    real = Path(os.environ.get("CONSORTIUM_REAL_OUTPUTS", ROOT.parent / "shared/data"))
    path = real / "mot-cascade/GPT4_result/gsm_cot1.json"
    if not path.is_file():
        pytest.fail(
            f"recorded gpt-4 GSM8K outputs not found at {path}; set CONSORTIUM_REAL_OUTPUTS"
        )
    return path


@pytest.fixture(scope="module")
def server(
    gpt4_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReplayServerProcess]:
    manifest, rows = import_files(
        "mot-cascade", [gpt4_file], dataset="gsm8k", kind="number", model="gpt-4", limit=3
    )
    folder = tmp_path_factory.mktemp("records") / "gsm8k"
    write_records(folder, manifest, rows)
    with ReplayServerProcess(None, records=[folder]) as started:
        yield started


def ask(client: openai.OpenAI, messages: list[dict[str, str]], **kwargs: object) -> str:
    reply = client.chat.completions.create(model="gpt-4", messages=messages, **kwargs)  # type: ignore[call-overload]
    return str(reply.choices[0].message.content)


def test_recorded_gpt4_gsm8k_answers_verbatim_and_in_sample_order(
    server: ReplayServerProcess, gpt4_file: Path
) -> None:
    recorded = json.loads(gpt4_file.read_text())[0]
    question, samples = recorded["question"], recorded["generated"]
    assert len(samples) == 3
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    assert [m.id for m in client.models.list()] == ["gpt-4"]
    first = [{"role": "user", "content": question}]
    assert ask(client, first) == samples[0]
    assert ask(client, first) == samples[0]  # the same request, the same answer (a retry)
    # the second ask: by explicit index (seed or header) or by the transcript
    assert ask(client, first, seed=1) == samples[1]
    assert ask(client, first, extra_headers={"x-consortium-sample": "1"}) == samples[1]
    again = [*first, {"role": "assistant", "content": samples[0]}, *first]
    assert ask(client, again) == samples[1]
    third = [*again, {"role": "assistant", "content": samples[1]}, *first]
    assert ask(client, third) == samples[2]
    reply = client.chat.completions.create(model="gpt-4", messages=first, seed=2)  # type: ignore[call-overload]
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    client.close()


def test_samples_running_out_is_a_typed_error_not_a_reused_sample(
    server: ReplayServerProcess, gpt4_file: Path
) -> None:
    question = json.loads(gpt4_file.read_text())[1]["question"]
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        ask(client, [{"role": "user", "content": question}], seed=3)
    body = caught.value.body
    assert isinstance(body, dict) and body.get("code") == "samples_exhausted"
    assert "3 recorded sample(s)" in str(body.get("message"))
    with pytest.raises(openai.BadRequestError):
        ask(
            client,
            [{"role": "user", "content": question}],
            extra_headers={"x-consortium-sample": "x"},
        )
    client.close()
