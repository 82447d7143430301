"""Real small models behind llama.cpp's own OpenAI-compatible server (`python -m llama_cpp.server`
from llama-cpp-python), one server process per model on loopback, and the pool file that points at
them.

One process per model, not one server with several models: llama-cpp-python's server keeps one
model loaded and swaps on every request for the other, and answers one request at a time. Each
server gets its own threads, so two models answer concurrently on a 2-core machine.

The servers outlive the command that starts them (`consortium local start`); their pids, ports and
logs are kept in `STATE_DIR/servers.json`, which `consortium local stop` reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import httpx

from consortium.core.errors import ConfigError, ConsortiumError
from consortium.core.process import (
    ManagedProcess,
    StoppedOnExit,
    command_line,
    end_process,
    is_running,
)
from consortium.pool.config import ModelConfig, PoolConfig, dump_pool
from consortium.runtime.launch import free_port
from consortium.smallmodels.files import INSTALL_HINT, MODELS, GgufModel, locate

STATE_FILE = "servers.json"
STRENGTHS = {
    "smollm2-135m": "SmolLM2-135M-Instruct (llama.cpp, Q4_1): a tiny instruct model; weak",
    "gemma3-270m": "Gemma 3 270M base (llama.cpp, Q4_K_M, gemma chat format): a tiny base model",
}


@dataclass(frozen=True)
class ServerSettings:
    threads: int = 1
    """Threads per server; with two servers on 2 cores, one each."""
    n_ctx: int = 2048
    max_tokens: int = 256
    """The pool file's default completion length for these models."""
    startup_timeout: float = 120.0
    host: str = "127.0.0.1"


@dataclass(frozen=True)
class RunningServer:
    name: str
    pid: int
    port: int
    model_file: str
    log: str
    host: str = "127.0.0.1"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def parse_models(text: str) -> list[GgufModel]:
    """`smollm2-135m,gemma3-270m` → the pinned models; a clear error for an unknown name."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in MODELS]
    if unknown or not names:
        raise ConfigError(
            f"unknown local model {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join(MODELS)}"
        )
    return [MODELS[name] for name in names]


def server_command(model: GgufModel, path: Path, port: int, settings: ServerSettings) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(path),
        "--model_alias",
        model.name,
        "--host",
        settings.host,
        "--port",
        str(port),
        "--n_threads",
        str(settings.threads),
        "--n_ctx",
        str(settings.n_ctx),
        # The default keeps logits for every position (GiBs at n_ctx 4096); generation needs none.
        "--logits_all",
        "False",
    ]
    if model.chat_format is not None:
        command += ["--chat_format", model.chat_format]
    return command


def pool_config(servers: Sequence[RunningServer], settings: ServerSettings) -> PoolConfig:
    return PoolConfig(
        models=[
            ModelConfig(
                name=server.name,
                base_url=server.base_url,
                model=server.name,
                max_concurrency=1,  # the server answers one request at a time; queue here
                timeout=120.0,
                max_retries=1,
                max_tokens=settings.max_tokens,
                strengths=STRENGTHS.get(server.name),
            )
            for server in servers
        ]
    )


def pool_text(servers: Sequence[RunningServer], settings: ServerSettings) -> str:
    header = (
        "# Real local models on llama.cpp's server, written by `consortium local start`.\n"
        "# Prices are 0: these models run on this machine and are billed by nobody.\n"
        "# The same file can point at Ollama, vLLM or a remote llama.cpp server instead: change\n"
        "# base_url (e.g. http://127.0.0.1:11434/v1 for Ollama) and `model` (that server's id).\n\n"
    )
    return header + dump_pool(pool_config(servers, settings))


class LlamaCppServers(StoppedOnExit):
    """Start, find and stop the servers whose state lives in `state_dir`.

    As a context manager it starts them on entry and stops them on exit (tests, scripts)."""

    def __init__(
        self,
        state_dir: Path,
        models: Sequence[GgufModel] = tuple(MODELS.values()),
        settings: ServerSettings | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.models = list(models)
        self.settings = settings or ServerSettings()
        self.servers: list[RunningServer] = []

    @property
    def state_file(self) -> Path:
        return self.state_dir / STATE_FILE

    def start(self) -> list[RunningServer]:
        """Start one server per model (detached, logs in the state dir); return once every one
        answers `/v1/models`. Servers already running from this state dir are an error."""
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"the llama.cpp server needs llama-cpp-python: {INSTALL_HINT}"
            ) from None
        if self.running():
            raise ConsortiumError(
                f"servers from {self.state_dir} are already running; "
                f"stop them first: consortium local stop --state {self.state_dir}"
            )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        files = {model.name: locate(model) for model in self.models}  # the cache's models/
        started: list[tuple[RunningServer, ManagedProcess]] = []
        try:
            for model in self.models:
                port = free_port()
                log = self.state_dir / f"{model.name}.log"
                process = ManagedProcess(
                    server_command(model, files[model.name], port, self.settings),
                    label=f"llama.cpp server for {model.name}",
                    ready=partial(_answers, f"http://{self.settings.host}:{port}/v1"),
                    startup_timeout=self.settings.startup_timeout,
                    log=log,
                    new_session=True,  # outlives `consortium local start`
                    poll_seconds=0.2,
                    popen_options={"stdin": subprocess.DEVNULL},
                ).launch()
                server = RunningServer(
                    model.name, process.pid, port, str(files[model.name]), str(log)
                )
                started.append((server, process))
                self._write([s for s, _ in started])
            for _, process in started:
                process.wait_ready()
        except BaseException:
            for _, process in started:
                process.stop()
            self.state_file.unlink(missing_ok=True)
            raise
        self.servers = [server for server, _ in started]
        return self.servers

    def _write(self, servers: Sequence[RunningServer]) -> None:
        state = {"settings": asdict(self.settings), "servers": [asdict(s) for s in servers]}
        self.state_file.write_text(json.dumps(state, indent=2))

    def running(self) -> list[RunningServer]:
        """The servers recorded in the state dir whose processes are still alive."""
        if not self.state_file.is_file():
            return []
        try:
            state = json.loads(self.state_file.read_text())
            servers = [RunningServer(**entry) for entry in state["servers"]]
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f"{self.state_file}: not a state file written by this tool") from None
        return [server for server in servers if _alive(server.pid)]

    def pool(self) -> PoolConfig:
        servers = self.servers or self.running()
        if not servers:
            raise ConsortiumError(f"no llama.cpp servers are running from {self.state_dir}")
        return pool_config(servers, self.settings)

    def write_pool(self, path: Path) -> Path:
        servers = self.servers or self.running()
        path.write_text(pool_text(servers, self.settings))
        return path

    def stop(self) -> list[str]:
        """Stop every recorded server; the names of those that were running."""
        stopped = [server.name for server in self.running() if end_process(server.pid)]
        self.state_file.unlink(missing_ok=True)
        self.servers = []
        return stopped


def _answers(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _alive(pid: int) -> bool:
    """A live llama.cpp server process (a reused pid of another program does not count)."""
    return is_running(pid) and b"llama_cpp.server" in command_line(pid)
