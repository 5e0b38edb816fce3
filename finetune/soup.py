"""Weight-average LoRA adapters of one base into one adapter ("model soup"), exactly.

    python -m finetune.soup runs/r4 runs/fastapply-small-r11/checkpoint-000020 \
        --weights 0.3 0.7 --out runs/soup
    python -m finetune.score runs/soup --records ...     # then finetune.ship, as for any run
    python -m finetune.soup fastapply-small runs/r12/checkpoint-000100 --weights 0.5 0.5 \
        --rank 32 --out runs/soup2                       # a soup no larger than the release

Each adapter changes a weight by ``B @ A * alpha / r``. The soup stacks the adapters' ``A`` rows and
``B`` columns, each scaled by the square root of its weight, into one adapter of the summed rank with
the same ``alpha / r``: its change is exactly the weighted sum of theirs, so it loads, merges and
ships like any adapter (twice the rank, twice the size). ``fastapply-small`` names the shipped one.
The soup records its parts, their weights and their own training records in ``soup.json``, so a
released soup still says how each part was trained. This module trains nothing.

``--rank N`` keeps the soup at rank ``N``: each layer's summed change is factored again, keeping its
``N`` largest singular directions (the best rank-``N`` approximation of that change; exact where the
change has rank ``N`` or less). That is how a soup of several runs, or one adapter made smaller,
still fits the size a release may hold; ``soup.json`` records the share of each change it kept.
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


def soup(adapters: list[str | Path], weights: list[float], out: str | Path, rank: int | None = None) -> dict:
    """Write to ``out`` the adapter whose change is ``sum(w * change)`` over ``adapters`` (at most
    ``rank``, the best approximation of that rank, where given); return its config."""
    import torch
    from safetensors.torch import load_file, save_file

    if rank is not None and rank < 1:
        raise UsageError(f"--rank must be at least 1, not {rank}")
    if len(adapters) != len(weights) or len(adapters) < (1 if rank else 2):
        raise UsageError("give two or more adapters (one with --rank) and one weight for each")
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
    record = {"adapters": [str(a) for a in adapters], "weights": weights}
    total = sum(c["r"] for c in configs)
    if rank is not None and rank < total:
        record.update(rank=rank, kept=_truncate(stacked, rank))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(stacked, out / "adapter_model.safetensors", metadata={"format": "pt"})
    config = dict(configs[0], r=min(total, rank or total))
    alpha = scale * config["r"]
    config["lora_alpha"] = int(alpha) if float(alpha).is_integer() else alpha
    (out / "adapter_config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    record["training"] = [training_record(path) for path in dirs]
    (out / "soup.json").write_text(json.dumps(record, indent=1) + "\n")
    return config


def _truncate(stacked: dict, rank: int) -> dict:
    """Factor each layer's change ``B @ A`` again at ``rank``, in place; return the smallest and the
    median share of a change's norm kept (1.0 where nothing was lost)."""
    import torch

    kept = []
    for a_name in [name for name in stacked if "lora_A" in name]:
        b_name = a_name.replace("lora_A", "lora_B")
        a, b = stacked[a_name].double(), stacked[b_name].double()
        q_b, r_b = torch.linalg.qr(b)            # B = Qb Rb, A^T = Qa Ra: B A = Qb (Rb Ra^T) Qa^T
        q_a, r_a = torch.linalg.qr(a.T)
        u, s, vh = torch.linalg.svd(r_b @ r_a.T)
        root = s[:rank].sqrt()
        stacked[b_name] = (q_b @ (u[:, :rank] * root)).float().contiguous()
        stacked[a_name] = ((root[:, None] * vh[:rank]) @ q_a.T).float().contiguous()
        total = float(s.square().sum())
        kept.append(float(s[:rank].square().sum()) / total if total else 1.0)
    kept.sort()
    return {"norm_share_min": round(math.sqrt(kept[0]), 6),
            "norm_share_median": round(math.sqrt(kept[len(kept) // 2]), 6)}


def _norm(value):
    return sorted(value) if isinstance(value, list) else value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapters", nargs="+", help="LoRA adapter directories (or fastapply-small, the shipped one)")
    parser.add_argument("--weights", nargs="+", type=float, required=True, help="one weight per adapter, summing to 1")
    parser.add_argument("--out", required=True, help="directory for the averaged adapter")
    parser.add_argument("--rank", type=int, help="keep the soup at this rank: the best approximation of that rank")
    args = parser.parse_args(argv)
    try:
        config = soup(args.adapters, args.weights, args.out, args.rank)
    except FastapplyError as exc:
        print(f"finetune.soup: error: {exc}", file=sys.stderr)
        return exc.exit_code
    kept = json.loads((Path(args.out) / "soup.json").read_text()).get("kept")
    share = (f"; share of each layer's change kept: min {kept['norm_share_min']:.6f}, "
             f"median {kept['norm_share_median']:.6f}") if kept else ""
    print(f"wrote {args.out}: rank {config['r']}, lora_alpha {config['lora_alpha']:g}{share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
