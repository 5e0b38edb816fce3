"""Tree verification against single-draft verification: forward passes on the suite, wall time on a model.

    python benchmarks/tree_bench.py                                    # passes: all 450 suite tasks, replayed
    python benchmarks/tree_bench.py --timed evals/tasks/bench.jsonl.gz --device cpu   # and wall time

Passes: every task of ``--tasks`` decoded by fastapply's policy on a ``ReplayTarget`` (a target that
answers the expected file, so the number of passes is a property of the draft alone), once verifying
only the best draft (``trees=False``) and once verifying the drafter's alternatives beside it as a tree.
Wall time (``--timed``): the same two on the shipped model (``--model``), greedy, on every task of that
file, each after an untimed warm-up; the outputs must be token for token the same. Prints a table and
writes ``benchmarks/results/tree.json``. Take the timed part on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.apply import plan_edit, run_plan, token_budget  # noqa: E402
from fastapply.bench import cpu_model  # noqa: E402
from fastapply.prompt import answer_ids  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "tree.json"
MODES = {"single draft": False, "tree": True}


def replayed_passes(tokenizer, tasks) -> list[dict]:
    from fastapply.replay import ReplayTarget

    rows = []
    for task in tasks:
        plan = plan_edit(tokenizer, task.original, task.update, task.instruction, language=task.language)
        reference = answer_ids(tokenizer, plan.preset, task.expected)
        budget = max(plan.default_max_new_tokens, len(reference) + 256)
        row = {"task": task.id, "tokens": len(reference)}
        for mode, trees in MODES.items():
            result = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply", budget,
                              {tokenizer.eos_token_id}, trees=trees)
            row[mode] = result.stats.passes
        rows.append(row)
    return rows


def timed(model, tokenizer, tasks) -> list[dict]:
    from fastapply.loading import stop_ids_of
    from fastapply.target import HFTarget

    stops = stop_ids_of(model, tokenizer)
    rows = []
    for i, task in enumerate(tasks):
        plan = plan_edit(tokenizer, task.original, task.update, task.instruction, language=task.language)
        budget = token_budget(model, plan)
        row: dict = {"task": task.id}
        outputs = {}
        for mode, trees in MODES.items():
            if i == 0:  # warm-up: first-call overheads and the verify-cost calibration
                run_plan(HFTarget(model), tokenizer, plan, "fastapply", 16, stops, trees=trees)
            result = run_plan(HFTarget(model), tokenizer, plan, "fastapply", budget, stops, trees=trees)
            outputs[mode] = result.token_ids
            row[mode] = {"passes": result.stats.passes, "seconds": round(result.stats.seconds, 3),
                         "tokens": result.stats.tokens}
        row["same_output"] = outputs["tree"] == outputs["single draft"]
        rows.append(row)
        print(f"{task.id}: {row}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="evals/tasks/suite.jsonl.gz", help="tasks whose passes are replayed")
    parser.add_argument("--timed", help="tasks timed on the model (e.g. evals/tasks/bench.jsonl.gz)")
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from fastapply.loading import load_model, resolve_named

    tokenizer = AutoTokenizer.from_pretrained(resolve_named(args.model))
    replayed = replayed_passes(tokenizer, load_tasks(args.tasks))
    totals = {mode: sum(row[mode] for row in replayed) for mode in MODES}
    fewer = statistics.median(row["single draft"] / row["tree"] for row in replayed if row["tree"])
    print(f"replayed on {len(replayed)} tasks of {args.tasks}: passes, single draft {totals['single draft']}, "
          f"tree {totals['tree']} ({totals['tree'] / totals['single draft']:.3f}x); "
          f"median per task single/tree {fewer:.3f}")
    report = {"machine": cpu_model(), "tasks": args.tasks,
              "replayed": {"totals": totals, "median_single_over_tree": round(fewer, 4), "rows": replayed}}
    if args.timed:
        model, tokenizer = load_model(args.model, device=args.device, dtype="auto")
        rows = timed(model, tokenizer, load_tasks(args.timed))
        seconds = {mode: sum(row[mode]["seconds"] for row in rows) for mode in MODES}
        ratio = statistics.median(row["single draft"]["seconds"] / row["tree"]["seconds"] for row in rows)
        print(f"\n{'task':<44} {'passes single':>13} {'passes tree':>11} {'s single':>9} {'s tree':>8}")
        for row in rows:
            print(f"{row['task'][:44]:<44} {row['single draft']['passes']:>13} {row['tree']['passes']:>11} "
                  f"{row['single draft']['seconds']:>9.2f} {row['tree']['seconds']:>8.2f}")
        print(f"total seconds: single draft {seconds['single draft']:.1f}, tree {seconds['tree']:.1f}; "
              f"median speedup of the tree {ratio:.3f}x; same output {sum(r['same_output'] for r in rows)}/{len(rows)}")
        report["timed"] = {"tasks": args.timed, "model": args.model, "device": args.device,
                           "seconds": {m: round(s, 2) for m, s in seconds.items()},
                           "median_speedup": round(ratio, 4), "rows": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
