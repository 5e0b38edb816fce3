"""fastapply-small, the default model: SmolLM2-135M-Instruct with fastapply's LoRA adapter.

The installed package carries only the adapter (bf16 safetensors), its tokenizer files and a model card
in ``fastapply/models/fastapply-small/``; the base comes from the package registry (``basemodel.py``).
On first use ``checkpoint`` merges the two and caches the merged checkpoint under a name keyed by
both hashes (base GGUF and adapter), so a new adapter or base is merged afresh and every later load is
an ordinary checkpoint load. It does not decode or pick engines; ``loading.load_model`` calls it for
the name ``fastapply-small``.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path

from fastapply.basemodel import BASE, load_base, save_checkpoint
from fastapply.errors import FastapplyError
from fastapply.loading import cache_dir, with_adapter

log = logging.getLogger(__name__)

NAME = "fastapply-small"
ADAPTER_DIR = Path(__file__).resolve().parent / "models" / NAME
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def available() -> bool:
    """Whether this installation carries the adapter (a checkout before the first release does not)."""
    return all((ADAPTER_DIR / name).is_file() for name in ADAPTER_FILES)


def adapter_sha256() -> str:
    """One hash over the adapter's files, in a fixed order."""
    digest = hashlib.sha256()
    for name in ADAPTER_FILES:
        digest.update(name.encode() + b"\0" + (ADAPTER_DIR / name).read_bytes())
    return digest.hexdigest()


def merged_dir() -> Path:
    return cache_dir() / "models" / f"{NAME}-{BASE.gguf_sha256[:12]}-{adapter_sha256()[:12]}"


def cached() -> Path | None:
    """The merged checkpoint when it is in the cache, else None."""
    directory = merged_dir()
    return directory if (directory / "config.json").is_file() else None


def checkpoint(progress: bool = False) -> Path:
    """The merged fastapply-small checkpoint, built on first use (base fetched and checked, adapter
    merged in float32, the result saved with the adapter's tokenizer files); older merges are removed."""
    if not available():
        raise FastapplyError(f"this installation has no {NAME} adapter ({ADAPTER_DIR}); pass --model PATH_OR_HUB_ID")
    directory = cached()
    if directory is not None:
        return directory
    directory = merged_dir()
    log.info("merging %s into %s (first use)", NAME, directory)
    model, tokenizer = load_base(progress=progress)
    model = merge_adapter(model)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ADAPTER_DIR)  # the release's own tokenizer files
    save_checkpoint(model, tokenizer, directory)
    for stale in directory.parent.glob(f"{NAME}-*"):
        if stale != directory and stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
    return directory


def merge_adapter(model):
    """``model`` with the shipped LoRA adapter added into its weights (float32, the dtype it was trained in)."""
    return with_adapter(model, str(ADAPTER_DIR)).merge_and_unload()
