from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from consortium.pool.config import PoolConfig
from consortium.replay.data import ReplayData, load_replay
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.runtime.pgserver import PostgresServer, server_programs
from consortium.smallmodels.llamacpp import LlamaCppServers
from tests.helpers import LIVE_SETTINGS, ReplayServers, SharedRecords

pytest_plugins = ("tests.budget",)  # CPU per file and fixture with CONSORTIUM_TEST_BUDGET

ROOT = Path(__file__).resolve().parents[1]

# One model cache for every test and every command a test runs, whatever its working folder: the
# static encoder is distilled, Gemma assembled and a GGUF dequantized once per checkout instead of
# once per temporary folder (tens of seconds of CPU each). A cache changes only how long a
# command takes; the pages' tests keep it while they drop the rest of CONSORTIUM_*.
os.environ.setdefault("CONSORTIUM_CACHE", str(ROOT / ".consortium"))
# No model hub at run time: set before any test imports huggingface_hub, which reads it once
# (a command run in process cannot turn it on later).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

CHECKOUT_TRACES = ROOT / "consortium-traces.db"
"""The trace store a command run from the checkout writes by default (`DEFAULT_TRACES`)."""

# What the suite may write inside the checkout: git-ignored caches and tool state, never a result
# (a trace store, records folder, report or policy belongs in a temporary folder). The guard
# below leaves these out of its snapshot.
ALLOWED_WRITES = (
    ".venv",  # the virtual environment (console scripts, pip's state; `make install`)
    "**/__pycache__",  # Python's bytecode, written by every import
    ".pytest_cache",  # pytest's own cache (last failures, xdist)
    ".mypy_cache",  # mypy's cache (`make lint`; test_architecture type-checks snippets)
    ".ruff_cache",  # ruff's cache (`make lint`)
    ".hypothesis",  # hypothesis' example database
    # model files, the ONNX encoder's export and dequantized GGUF files, cached ($CONSORTIUM_CACHE;
    # not .consortium/llamacpp, the state `consortium local start` keeps without --state)
    ".consortium/encoders",
    ".consortium/models",
    ".consortium/dequantized",
    ".cache",  # the code checks' sandbox runs, cached (`--records-cache` .cache/coordination)
)


def checkout_state() -> dict[str, object]:
    """What a test could have written in the checkout: `git status --porcelain --ignored` (every
    file, ignored ones too, `ALLOWED_WRITES` left out) with each listed file's size and mtime
    (a file already modified or ignored, such as the trace store, changes without a new line),
    the checkout's top-level names (a new empty folder) and the default trace store's size and
    mtime."""

    def stamp(path: Path) -> tuple[int, int] | None:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        return stat.st_size, stat.st_mtime_ns

    excluded = [f":(exclude,glob){pattern}/**" for pattern in ALLOWED_WRITES]
    status = ["git", "status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=all"]
    listed = subprocess.run(
        [*status, "--", ".", *excluded],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    allowed_top = {pattern.split("/")[0] for pattern in ALLOWED_WRITES}
    state: dict[str, object] = {
        "top level": sorted(p.name for p in ROOT.iterdir() if p.name not in allowed_top),
        f"{CHECKOUT_TRACES.name} (size, mtime)": stamp(CHECKOUT_TRACES),
    }
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): the rest still holds
        return state
    entries = iter(listed.stdout.split("\0"))
    for entry in entries:
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # a rename or copy: its source path follows
            next(entries, None)
        state[path] = (code, stamp(ROOT / path))
    return state


LONGEST_FIRST = (
    "test_real_models.py",
    "test_demo.py",
    "test_records_loop.py",
    "test_readme.py",
    "test_debates_live.py",
    "test_own_endpoints.py",
    "test_grpo.py",
    "test_routing_training.py",
    "test_evolve.py",
    "test_conductor_stages.py",
)
"""The files with the most CPU in a run of both tiers (`scripts/test_budget.py`), longest first."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, then the other files with a slow test, then the rest (a stable
    sort): under `-n 2 --dist loadfile` each worker takes whole files in this order, so the long
    ones start at once instead of leaving one worker alone at the end of the run."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> tuple[int, bool]:
        name = item.path.name
        longest = LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
        return longest, item.path not in slow

    items.sort(key=rank)


@pytest.fixture(scope="session", autouse=True)
def checkout_unchanged() -> Iterator[None]:
    """Tests never write the checkout's files: a session (or, under pytest-xdist, each worker's
    share of it) fails when `git status` or the checkout's trace store changed while it ran.
    Someone editing the checkout during the run trips it too: rerun then."""
    before = checkout_state()
    yield
    after = checkout_state()
    changed = sorted(
        key for key in before.keys() | after.keys() if before.get(key) != after.get(key)
    )
    if changed:
        lines = [f"{key}: {before.get(key)} -> {after.get(key)}" for key in changed]
        pytest.fail(
            "the tests wrote into the checkout (use tmp_path; --traces sqlite:///{tmp_path}/t.db "
            "or cwd=tmp_path for a command; or someone edited the checkout meanwhile: rerun):\n"
            + "\n".join(lines[:40]),
            pytrace=False,
        )


def data_dir() -> Path:
    path = Path(os.environ.get("CONSORTIUM_REPLAY_DATA", ROOT.parent / "shared/data/routerdc"))
    if not path.is_dir():
        pytest.fail(f"recorded data not found at {path}; set CONSORTIUM_REPLAY_DATA")
    return path


@pytest.fixture(scope="session")
def real() -> Path:
    """The real recorded outputs of frontier models (`../shared/data`)."""
    path = Path(os.environ.get("CONSORTIUM_REAL_OUTPUTS", ROOT.parent / "shared/data"))
    if not (path / "rereading").is_dir():
        pytest.fail(f"real recorded outputs not found at {path}; set CONSORTIUM_REAL_OUTPUTS")
    return path


RECORDS_SUBSET = 60
"""Questions per data set in `small_records`: enough for both splits, seconds to import."""


@pytest.fixture(scope="session")
def shared_records(
    real: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> SharedRecords:
    """`shared_records(name, limit)`: a records folder made once for the whole session."""
    base = tmp_path_factory.getbasetemp()
    session = base if worker_id == "master" else base.parent  # pytest-N, shared by the workers
    return SharedRecords(real, session / "shared-records")


@pytest.fixture(scope="session")
def small_records(shared_records: SharedRecords) -> dict[str, Path]:
    """The first 60 questions of GSM8K, MATH, HumanEval and DATE, imported from the real
    recorded outputs into a temporary folder (a fresh clone has no `records/`)."""
    return {
        name: shared_records(name, RECORDS_SUBSET)
        for name in ("gsm8k", "math", "humaneval", "date")
    }


@pytest.fixture(scope="session")
def replay_dir() -> Path:
    return data_dir()


@pytest.fixture(scope="session")
def replay_data(replay_dir: Path) -> ReplayData:
    return load_replay(replay_dir)


@pytest.fixture(scope="session")
def replay_server(replay_dir: Path) -> Iterator[ReplayServerProcess]:
    with ReplayServerProcess(replay_dir) as server:
        yield server


@pytest.fixture(scope="session")
def replay_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplayServers]:
    """Replay servers shared by the session's tests, one per folders and arguments."""
    servers = ReplayServers(tmp_path_factory.mktemp("replay-servers"))
    yield servers
    servers.stop_all()


@pytest.fixture(scope="session")
def split2_workers(replay_data: ReplayData, replay_server: ReplayServerProcess) -> PoolConfig:
    """The 7 open models of split2 on the session's replay server, as a pool."""
    return replay_pool(replay_data, replay_server.base_url, replay_data.models["split2"])


@pytest.fixture(scope="session")
def llama_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServers]:
    """The real llama.cpp pool (SmolLM2-135M + Gemma 3 270M), started once per session (per
    xdist worker) for every test that asks a live model; a test that stops or kills a server
    starts its own."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.fail(
            "llama-cpp-python is not installed: make install (or CMAKE_ARGS='-DLLAVA_BUILD=OFF "
            "-DGGML_NATIVE=OFF' pip install -e '.[local]'); leave them out with -m 'not real'"
        )
    with LlamaCppServers(tmp_path_factory.mktemp("llamacpp"), settings=LIVE_SETTINGS) as running:
        yield running


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the machine's own in a temporary folder, on a loopback port;
    stopped and removed after the session (`scripts/system-deps.sh` installs it as root)."""
    if server_programs() is None:
        pytest.fail("PostgreSQL is not installed: bash scripts/system-deps.sh (as root)")
    with PostgresServer() as server:
        yield server
        home = server.data_dir.parent
    assert not home.exists(), "the server's folder is removed"
