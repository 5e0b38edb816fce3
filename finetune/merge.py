"""Merge a LoRA adapter into its base model and save a plain checkpoint (weights + tokenizer) that
``fastapply --model`` loads with no peft at apply time.

    python -m finetune.merge runs/llama-1b-lora --out runs/llama-1b-merged
    python -m finetune.merge runs/llama-1b-lora --base meta-llama/Llama-3.2-1B-Instruct --out runs/llama-1b-merged
    python -m finetune.merge fastapply-small --out runs/fastapply-small-merged    # the shipped adapter
    fastapply FILE --edit "..." --model runs/llama-1b-merged

The merge is done in float32 on the CPU (``W + B @ A * alpha / r`` rounded once), then saved in the
base's own dtype unless ``--dtype`` says otherwise. This module does not train; ``train.py`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError

SAVE_DTYPES = ("auto", "float32", "bfloat16", "float16")


def adapter_dir(name: str | Path, role: str = "adapter") -> Path:
    """The directory of the LoRA adapter ``name``: ``fastapply-small`` is the one shipped in the package."""
    from fastapply import bundled

    path = bundled.ADAPTER_DIR if str(name) == bundled.NAME else Path(name).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise UsageError(f"{role} {name}: no LoRA adapter there (adapter_config.json is missing)")
    return path


def adapter_base(adapter: str | Path) -> str:
    """The base model an adapter was trained on, as recorded in its ``adapter_config.json``."""
    path = Path(adapter) / "adapter_config.json"
    try:
        base = json.loads(path.read_text()).get("base_model_name_or_path")
    except OSError:
        raise UsageError(f"{adapter} is not a LoRA adapter directory (no adapter_config.json)") from None
    if not base:
        raise UsageError(f"{path} does not name its base model; pass --base")
    return base


def merge_adapter(adapter: str | Path, out: str | Path, base: str | None = None, dtype: str = "auto"):
    """Merge ``adapter`` into ``base`` (default: the adapter's recorded base), save to ``out``; return the model."""
    import torch

    from fastapply.loading import load_model, resolve_named

    if dtype not in SAVE_DTYPES:
        raise UsageError(f"unknown dtype {dtype!r}; choose one of: {', '.join(SAVE_DTYPES)}")
    adapter = adapter_dir(adapter)
    base = resolve_named(base or adapter_base(adapter))  # fastapply's own names: their checkpoint in the cache
    model, tokenizer = load_model(base, device="cpu", dtype="float32", adapter=str(adapter))
    saved_dtype = _checkpoint_dtype(base) if dtype == "auto" else getattr(torch, dtype)
    merged = model.merge_and_unload().to(saved_dtype)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return merged


def _checkpoint_dtype(base: str):
    """The dtype the base checkpoint is stored in (float32 when its config does not say)."""
    import torch
    from transformers import AutoConfig

    stored = getattr(AutoConfig.from_pretrained(base), "dtype", None)
    if isinstance(stored, str):
        stored = getattr(torch, stored, None)
    return stored if isinstance(stored, torch.dtype) else torch.float32


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapter", help="LoRA adapter directory (the --out of finetune.train), or fastapply-small "
                                        "(the shipped one)")
    parser.add_argument("--out", required=True, help="directory for the merged checkpoint")
    parser.add_argument("--base", help="base model path or hub id (default: the one the adapter records)")
    parser.add_argument("--dtype", default="auto", choices=SAVE_DTYPES, help="saved dtype (default: the base's)")
    args = parser.parse_args(argv)
    try:
        merged = merge_adapter(args.adapter, args.out, args.base, args.dtype)
    except FastapplyError as exc:
        print(f"finetune.merge: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {args.out}: {sum(p.numel() for p in merged.parameters()) / 1e6:.1f}M parameters, {merged.dtype}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
