"""Weight-average LoRA adapters of one base into one adapter ("model soup"), exactly.

    python -m finetune.soup runs/r4 runs/fastapply-small-r11/checkpoint-000020 \
        --weights 0.3 0.7 --out runs/soup
    python -m finetune.score runs/soup --records ...     # then finetune.ship, as for any run

Each adapter changes a weight by ``B @ A * alpha / r``. The soup stacks the adapters' ``A`` rows and
``B`` columns, each scaled by the square root of its weight, into one adapter of the summed rank with
the same ``alpha / r``: its change is exactly the weighted sum of theirs, so it loads, merges and
ships like any adapter (twice the rank, twice the size). ``fastapply-small`` names the shipped one.
The soup records its parts, their weights and their own training records in ``soup.json``, so a
released soup still says how each part was trained. This module trains nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from fastapply.errors import FastapplyError, UsageError
from finetune.merge import adapter_dir
from finetune.ship import training_record

_SAME = ("base_model_name_or_path", "target_modules", "peft_type")


def soup(adapters: list[str | Path], weights: list[float], out: str | Path) -> dict:
    """Write to ``out`` the adapter whose change is ``sum(w * change)`` over ``adapters``; return its config."""
    import torch
    from safetensors.torch import load_file, save_file

    if len(adapters) < 2 or len(adapters) != len(weights):
        raise UsageError("give two or more adapters and one weight for each")
    if any(w < 0 for w in weights) or not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
        raise UsageError(f"the weights must be at least 0 and sum to 1, not {weights}")
    dirs = [adapter_dir(a) for a in adapters]
    configs = [json.loads((path / "adapter_config.json").read_text()) for path in dirs]
    scale = configs[0]["lora_alpha"] / configs[0]["r"]
    for path, config in zip(dirs[1:], configs[1:]):
        differs = [key for key in _SAME if _norm(config.get(key)) != _norm(configs[0].get(key))]
        if differs or not math.isclose(config["lora_alpha"] / config["r"], scale):
            raise UsageError(f"{path} does not match {dirs[0]} ({', '.join(differs) or 'lora_alpha / r'})")
    tensors = [load_file(path / "adapter_model.safetensors") for path in dirs]
    if any(t.keys() != tensors[0].keys() for t in tensors[1:]):
        raise UsageError("the adapters do not adapt the same layers")
    stacked = {}
    for name in tensors[0]:
        parts = [math.sqrt(w) * t[name].float() for w, t in zip(weights, tensors)]
        stacked[name] = torch.cat(parts, dim=0 if "lora_A" in name else 1).contiguous()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(stacked, out / "adapter_model.safetensors", metadata={"format": "pt"})
    config = dict(configs[0], r=sum(c["r"] for c in configs))
    alpha = scale * config["r"]
    config["lora_alpha"] = int(alpha) if float(alpha).is_integer() else alpha
    (out / "adapter_config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    record = {"adapters": [str(a) for a in adapters], "weights": weights,
              "training": [training_record(path) for path in dirs]}
    (out / "soup.json").write_text(json.dumps(record, indent=1) + "\n")
    return config


def _norm(value):
    return sorted(value) if isinstance(value, list) else value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapters", nargs="+", help="LoRA adapter directories (or fastapply-small, the shipped one)")
    parser.add_argument("--weights", nargs="+", type=float, required=True, help="one weight per adapter, summing to 1")
    parser.add_argument("--out", required=True, help="directory for the averaged adapter")
    args = parser.parse_args(argv)
    try:
        config = soup(args.adapters, args.weights, args.out)
    except FastapplyError as exc:
        print(f"finetune.soup: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {args.out}: rank {config['r']}, lora_alpha {config['lora_alpha']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
