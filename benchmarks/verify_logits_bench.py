"""What a verify costs against where the model rejects its draft: ``HFTarget.verify`` turns hidden
states into logits chunk by chunk and stops at the first rejected draft token, so a long draft
rejected early skips most of the output layer.

    python benchmarks/verify_logits_bench.py                 # fastapply-small on cpu
    python benchmarks/verify_logits_bench.py --device cuda --dtype bfloat16

After a prefill of ``--context`` tokens of a real prompt, each round times one verify of a
``--draft``-token draft whose choices are read up to each rejection point (what a rejection there
costs: the logits of the chunks up to it), the points in turn so a busy moment hurts them alike; then rolls the pass back. Reported: the best of
``--rounds`` per point, against the float32 pass through the whole draft. Each round does this twice:
with the output layer in float32, and through its int8 screen (``screen.py``, where it measured faster
than float32; the same choices, checked here). Prints a table and writes
``benchmarks/results/verify-logits-<device>.json``. Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.bench import cpu_model  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = Path(__file__).resolve().parent.parent / "evals" / "tasks" / "bench.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--context", type=int, default=1500)
    parser.add_argument("--draft", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    from fastapply import screen
    from fastapply.loading import load_model, resolve_device, synchronize
    from fastapply.prompt import get_preset, prompt_ids
    from fastapply.target import HFTarget
    from fastapply.tasks import load_tasks

    screen.PAYS_AFTER = 0  # screened from the first request, as a long-lived process is once it pays

    device = resolve_device(args.device)
    model, tokenizer = load_model(args.model, device=device, dtype=args.dtype)
    task = max(load_tasks(str(TASKS)), key=lambda t: len(t.original))
    context = prompt_ids(tokenizer, get_preset("default"), task.original, task.update)[:args.context]
    draft = tokenizer(task.original)["input_ids"][:args.draft]
    targets = {"float32": HFTarget(model, screen_logits=False), "screened": HFTarget(model)}
    for target in targets.values():
        target.prefill(context)
    points = sorted({0, 16, 48, 112, 240, len(draft)} & set(range(len(draft) + 1)))
    times = {(name, p): [] for name in targets for p in points}
    for _ in range(args.rounds + 1):  # the first round warms up
        for through in points:
            for name, target in targets.items():
                pending = target.pending
                synchronize(device)
                start = time.perf_counter()
                target.verify(draft)[:through + 1]  # the choices read up to a rejection there, in order
                synchronize(device)
                times[name, through].append(time.perf_counter() - start)
                target.cache.crop(-(len(draft) + 1))
                target.pending = pending
    same = [list(target.verify(draft)) for target in targets.values()]
    if same[0] != same[1]:
        raise SystemExit("the screened verify chose other tokens than the float32 one")
    screen = targets["screened"]._screen
    full = min(times["float32", len(draft)][1:])
    rows = [{"rejected_at": p, **{f"{name}_s": round(min(times[name, p][1:]), 5) for name in targets},
             **{f"{name}_vs_whole_draft": round(min(times[name, p][1:]) / full, 3) for name in targets}}
            for p in points]
    print(f"{args.model} on {device}: context {len(context)}, draft {len(draft)}, logits apart: "
          f"{targets['float32']._head_apart}, int8 screen: {bool(screen)}"
          + (f" ({screen.exact_rows} positions decided in float32)" if screen else ""))
    print(f"{'rejected at':>11} {'float32 ms':>11} {'screened ms':>12} {'vs whole':>9}")
    for row in rows:
        print(f"{row['rejected_at']:>11} {row['float32_s'] * 1000:>11.1f} {row['screened_s'] * 1000:>12.1f} "
              f"{row['screened_vs_whole_draft']:>8.3f}x")
    out = RESULTS / f"verify-logits-{device}.json"
    out.write_text(json.dumps({"model": args.model, "device": device, "dtype": args.dtype,
                               "machine": cpu_model(), "context": len(context),
                               "draft": len(draft), "rounds": args.rounds, "screened": bool(screen),
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
