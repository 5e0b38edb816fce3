"""What grouped-query attention in place saves a verify: transformers' ``sdpa`` copies every layer's keys
and values once per query head of a group under a mask, ``fastapply.attention`` attends the groups as
they are (the same logits).

    python benchmarks/attention_bench.py                 # fastapply-small on cpu

After a prefill of ``--context`` tokens of a real prompt, each round times one verify of each draft
length with each attention, in turn so a busy moment hurts them alike, rolling every pass back; the
choices of the two are compared equal. Reported: the best of ``--rounds`` per length and attention, and
their ratio. Prints a table and writes ``benchmarks/results/attention-<device>.json``. Take it on an
otherwise idle machine.
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
DRAFTS = (3, 15, 63, 255)  # tokens after the pending one: passes of 4, 16, 64 and 256 positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--context", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    import torch

    from fastapply.attention import NAME
    from fastapply.loading import load_model
    from fastapply.prompt import get_preset, prompt_ids
    from fastapply.target import HFTarget
    from fastapply.tasks import load_tasks

    model, tokenizer = load_model(args.model, device="cpu", dtype="auto")
    task = max(load_tasks(str(TASKS)), key=lambda t: len(t.original))
    context = prompt_ids(tokenizer, get_preset("default"), task.original, task.update)[:args.context]
    text = tokenizer(task.original)["input_ids"]
    attentions = {"sdpa": "sdpa", "grouped": NAME}
    targets = {name: HFTarget(model) for name in attentions}  # registers the grouped attention
    if model.config._attn_implementation != NAME:
        sys.exit("attention_bench: this model has no grouped heads under sdpa on a CPU; nothing to compare")
    for name, target in targets.items():
        model.set_attn_implementation(attentions[name])
        target.prefill(context)
    times = {(name, k): [] for name in attentions for k in DRAFTS}
    for _ in range(args.rounds + 1):  # the first round warms up
        for k in DRAFTS:
            choices = {}
            for name, target in targets.items():
                model.set_attn_implementation(attentions[name])
                start = time.perf_counter()
                choices[name] = list(target.verify(text[:k]))
                times[name, k].append(time.perf_counter() - start)
                target.rollback(k + 1)
            if choices["sdpa"] != choices["grouped"]:
                sys.exit(f"attention_bench: the attentions chose differently at a draft of {k}")
    rows = []
    print(f"fastapply-small verify at a {len(context)}-token context, best of {args.rounds}, ms "
          f"(torch {torch.__version__}, {torch.get_num_threads()} threads)")
    print(f"{'positions':>9}  {'sdpa':>8}  {'grouped':>8}  {'grouped / sdpa':>14}")
    for k in DRAFTS:
        best = {name: 1000 * min(times[name, k][1:]) for name in attentions}
        rows.append({"positions": k + 1, **{f"{name}_ms": round(ms, 2) for name, ms in best.items()},
                     "ratio": round(best["grouped"] / best["sdpa"], 3)})
        print(f"{k + 1:>9}  {best['sdpa']:>8.1f}  {best['grouped']:>8.1f}  {rows[-1]['ratio']:>14.3f}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "attention-cpu.json"
    out.write_text(json.dumps({"model": args.model, "context": len(context), "rounds": args.rounds,
                               "machine": cpu_model(),
                               "threads": torch.get_num_threads(), "torch": torch.__version__,
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
