"""Release a trained LoRA adapter as fastapply-small, the default model: the adapter in bfloat16, the
base's tokenizer files and the training record, inside the package (``fastapply/models/fastapply-small``)
so that a wheel or a non-editable install carries it.

    python -m finetune.ship runs/fastapply-small

The adapter's weights are rounded once to bfloat16 (merging casts them back to float32); a release
over ``--max-mb`` is refused. ``adapter_config.json`` names the base as ``smollm2-135m-instruct``, the
name fastapply fetches it by (``fastapply.basemodel``), and its target modules in sorted order; the
tokenizer's config leaves out how the cached base was loaded (``local_files_only``), so shipping the same
adapter again writes the same files, whatever the machine. ``training.json`` keeps the run's config and
metrics (a soup's parts, for one made by ``finetune.soup``; in the metrics, the training record of the
adapter a run continued). The model card (``README.md`` there) is
written by hand from the eval results and is left as it is; this module does not merge or evaluate.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError

MAX_MB = 25.0
TOKENIZER_FILES = ("tokenizer.json", "chat_template.jinja")
LOADING_OPTIONS = ("local_files_only",)  # recorded by the load that filled the cache, not the tokenizer's own


def ship(run: str | Path, out: str | Path | None = None, max_mb: float = MAX_MB) -> float:
    """Copy the adapter of the training run ``run`` into ``out`` (default: the package's release
    directory) in bfloat16; return its size in MB (10^6 bytes)."""
    import torch
    from safetensors.torch import load_file, save_file

    from fastapply import basemodel, bundled

    run = Path(run)
    weights = run / "adapter_model.safetensors"
    if not weights.is_file():
        raise UsageError(f"{run} holds no LoRA adapter (adapter_model.safetensors); ship a `mode: lora` run")
    tensors = {name: t.to(torch.bfloat16).contiguous() for name, t in load_file(weights).items()}
    size_mb = sum(t.numel() for t in tensors.values()) * 2 / 1e6
    if size_mb > max_mb:
        raise UsageError(f"the adapter is {size_mb:.1f} MB in bfloat16, over the {max_mb:g} MB a release may hold")
    out = Path(out) if out is not None else bundled.ADAPTER_DIR
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, out / "adapter_model.safetensors", metadata={"format": "pt"})
    config = json.loads((run / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = basemodel.BASE.name
    if isinstance(config.get("target_modules"), list):  # peft writes a set, in no fixed order
        config["target_modules"] = sorted(config["target_modules"])
    (out / "adapter_config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    tokenizer_dir = basemodel.checkpoint()
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer_dir / name, out / name)
    tokenizer_config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())
    for option in LOADING_OPTIONS:
        tokenizer_config.pop(option, None)
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2, ensure_ascii=False) + "\n")
    (out / "training.json").write_text(json.dumps(training_record(run), indent=1) + "\n")
    return size_mb


def training_record(path: str | Path) -> dict:
    """What the adapter directory ``path`` records of its training: a release's ``training.json``, or a
    run's config and metrics (and a soup's parts)."""
    path = Path(path)
    if (path / "training.json").is_file():
        return json.loads((path / "training.json").read_text())
    return {name: json.loads((path / f"{name}.json").read_text()) for name in ("train_config", "metrics", "soup")
            if (path / f"{name}.json").is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a LoRA training run (finetune.train --out)")
    parser.add_argument("--out", help="release directory (default: fastapply/models/fastapply-small)")
    parser.add_argument("--max-mb", type=float, default=MAX_MB)
    args = parser.parse_args(argv)
    try:
        size_mb = ship(args.run, args.out, args.max_mb)
    except FastapplyError as exc:
        print(f"finetune.ship: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"released {args.run} ({size_mb:.1f} MB adapter in bfloat16) into {args.out or 'fastapply/models/fastapply-small'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
