"""fastapply end to end with the output layer screened in int8 (``screen.py``) against float32, on the
same model and tasks, alternating per task so that a busy moment hurts both alike.

    python benchmarks/screen_bench.py                       # the 20 bench tasks, fastapply-small, cpu

Each task is decoded ``--rounds`` times each way (the best is kept), both ways giving the same tokens
(checked). Prints a table and writes ``benchmarks/results/screen-cpu.json``. Take it on an otherwise
idle machine; about 15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RESULTS = Path(__file__).resolve().parent / "results" / "screen-cpu.json"
TASKS = Path(__file__).resolve().parent.parent / "evals" / "tasks" / "bench.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--tasks", default=str(TASKS))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from fastapply import screen
    from fastapply.apply import plan_edit, run_plan, token_budget
    from fastapply.loading import load_model, stop_ids_of
    from fastapply.target import HFTarget
    from fastapply.tasks import load_tasks

    screen.PAYS_AFTER = 0  # screened from the first request, as a long-lived process is once it pays

    model, tokenizer = load_model(args.model, device="cpu")
    stops = stop_ids_of(model, tokenizer)
    rows = []
    for task in load_tasks(args.tasks):
        plan = plan_edit(tokenizer, task.original, task.update, task.instruction, language=task.language)
        budget = token_budget(model, plan, None)
        best: dict[str, float] = {}
        outputs = {}
        for _ in range(args.rounds):
            for name, screened in (("float32", False), ("screened", True)):
                start = time.perf_counter()
                result = run_plan(HFTarget(model, screen_logits=screened), tokenizer, plan, "fastapply", budget, stops)
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
                outputs[name] = result.token_ids
        if outputs["float32"] != outputs["screened"]:
            raise SystemExit(f"{task.id}: the screened decode wrote other tokens")
        row = {"task": task.id, "tokens": len(outputs["float32"]), "float32_s": round(best["float32"], 4),
               "screened_s": round(best["screened"], 4), "speedup": round(best["float32"] / best["screened"], 3)}
        rows.append(row)
        print(f"{task.id[:48]:48} {row['tokens']:>6} {row['float32_s']:>8.2f} {row['screened_s']:>8.2f} "
              f"{row['speedup']:>6.3f}x", flush=True)
    speedups = [row["speedup"] for row in rows]
    summary = {"tasks": len(rows), "float32_s": round(sum(r["float32_s"] for r in rows), 2),
               "screened_s": round(sum(r["screened_s"] for r in rows), 2),
               "median_speedup": round(statistics.median(speedups), 3),
               "quartiles": [round(q, 3) for q in statistics.quantiles(speedups, n=4)] if len(rows) > 1 else None}
    print(f"{len(rows)} tasks, same tokens both ways: float32 {summary['float32_s']} s, screened "
          f"{summary['screened_s']} s, median speedup {summary['median_speedup']}x")
    RESULTS.write_text(json.dumps({"model": args.model, "rounds": args.rounds, "summary": summary, "rows": rows},
                                  indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
