"""Release a trained checkpoint as fastapply's bundled model: bfloat16 safetensors and the tokenizer in
``models/fastapply-small/``, which the CLI uses when no ``--model`` is given.

    python -m finetune.ship runs/small/finetune --out models/fastapply-small

The weights are rounded once to bfloat16 (the dtype they were trained in under autocast); a release
over ``--max-mb`` is refused, so the repository stays small enough to clone and copy. This module
writes no model card; finetune/README.md says what goes in it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError

MAX_MB = 50.0


def ship(checkpoint: str | Path, out: str | Path, max_mb: float = MAX_MB) -> float:
    """Save ``checkpoint`` in bfloat16 to ``out``; return the weights' size in MB (10^6 bytes)."""
    import torch

    from fastapply.target import load_model

    model, tokenizer = load_model(str(checkpoint), device="cpu", dtype="float32")
    size_mb = sum(p.numel() for p in model.parameters()) * 2 / 1e6
    if size_mb > max_mb:
        raise UsageError(f"{checkpoint} is {size_mb:.1f} MB in bfloat16, over the {max_mb:g} MB a release may hold")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.safetensors*"):
        stale.unlink()
    model.to(torch.bfloat16).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return size_mb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a trained checkpoint directory (finetune.train --out)")
    parser.add_argument("--out", required=True, help="release directory, e.g. models/fastapply-small")
    parser.add_argument("--max-mb", type=float, default=MAX_MB)
    args = parser.parse_args(argv)
    try:
        size_mb = ship(args.checkpoint, args.out, args.max_mb)
    except FastapplyError as exc:
        print(f"finetune.ship: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {args.out}: {size_mb:.1f} MB of bfloat16 weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
