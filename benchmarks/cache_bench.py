"""The KV cache that rolls back by a length (``fastapply.kvcache.RollbackCache``) against transformers'
``DynamicCache`` (which concatenates the whole cache every pass and crops by slicing).

    python benchmarks/cache_bench.py                       # fastapply-small on cpu
    python benchmarks/cache_bench.py --device cuda --dtype bfloat16

Each round prefills a context of ``--context`` tokens, then runs ``--passes`` verify passes of ``k``
draft tokens, each followed by a rollback of the rejected part, as the decode loop does; the two
caches alternate round by round so a busy moment hurts both alike. Reported: the median over rounds of
the mean of the faster half of passes, per draft size. Prints a table and writes
``benchmarks/results/cache-<device>.json``. Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.bench import cpu_model  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def pass_seconds(model, make_cache, context, k: int, keep: int, passes: int) -> float:
    import torch

    from fastapply.loading import cache_keyword, synchronize

    cache = make_cache()
    cached = {cache_keyword(model): cache, "use_cache": True}
    generator = torch.Generator().manual_seed(k)
    with torch.inference_mode():
        model(input_ids=context, **cached, logits_to_keep=1)
        times = []
        for _ in range(passes):
            draft = torch.randint(100, 40000, (1, k + 1), generator=generator).to(context.device)
            synchronize(context.device)
            start = time.perf_counter()
            model(input_ids=draft, **cached, logits_to_keep=k + 1)
            cache.crop(-(k + 1 - keep))
            synchronize(context.device)
            times.append(time.perf_counter() - start)
    times.sort()
    return statistics.mean(times[: max(1, passes // 2)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--context", type=int, default=1500)
    parser.add_argument("--passes", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import torch
    from transformers import DynamicCache

    from fastapply.kvcache import RollbackCache
    from fastapply.loading import load_model

    model, _ = load_model(args.model, device=args.device, dtype=args.dtype)
    context = torch.randint(100, 40000, (1, args.context), generator=torch.Generator().manual_seed(0))
    context = context.to(model.device)
    caches = {"dynamic": lambda: DynamicCache(config=model.config), "rollback": lambda: RollbackCache(model.config)}
    rows = []
    for k in (0, 8, 32, 128):
        keep = min(k, k // 2 + 1)  # about half the draft accepted
        measured: dict[str, list[float]] = {name: [] for name in caches}
        for _ in range(args.rounds):
            for name, make in caches.items():
                measured[name].append(pass_seconds(model, make, context, k, keep, args.passes))
        row = {"draft": k, **{name: round(statistics.median(v) * 1000, 2) for name, v in measured.items()}}
        row["speedup"] = round(row["dynamic"] / row["rollback"], 3)
        rows.append(row)
    print(f"{'draft tokens':>12} {'DynamicCache ms':>16} {'RollbackCache ms':>17} {'speedup':>8}")
    for row in rows:
        print(f"{row['draft']:>12} {row['dynamic']:>16.2f} {row['rollback']:>17.2f} {row['speedup']:>8.3f}")
    out = RESULTS / f"cache-{args.device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": args.model, "device": args.device, "dtype": str(model.dtype),
                               "machine": cpu_model(), "context": args.context,
                               "passes": args.passes, "rounds": args.rounds, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
