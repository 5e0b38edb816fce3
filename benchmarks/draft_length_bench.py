"""Draft lengths that know where the edit is, against the same loop blind to it: passes, wasted draft
tokens and modelled verify time on the suite, replayed.

    python benchmarks/draft_length_bench.py                 # all 450 suite tasks
    python benchmarks/draft_length_bench.py --tasks evals/tasks/bench.jsonl.gz

Every task is decoded by fastapply's policy on a target that answers the expected file (so the passes
are a property of the drafts and the draft lengths alone; no model runs), once with the risky lines of
``fastapply/risk.py`` and once with none (every draft token counted alike, as the loop did before it
knew them). Each pass is charged by two pass-cost shapes: this CPU's measured verify costs for
fastapply-small (``--cpu-costs``: seconds at 0/8/32/128/256 draft tokens, taken by ``HFTarget`` on an
idle machine) and a GPU-like one (a pass of k tokens costs 1 + 0.002 k). The CPU figure is also given
over one prefill of the answer (its tokens times the CPU cost's slope past 128 tokens), the part of
``vs limit`` that drafting decides. Prints a table; writes ``benchmarks/results/draft-length.json``.
Takes about a minute a shape on 2 cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.apply import plan_edit, run_plan
from fastapply.costs import CostModel
from fastapply.prompt import answer_ids
from fastapply.replay import ReplayTarget
from fastapply.tasks import load_tasks

RESULTS = Path(__file__).resolve().parent / "results" / "draft-length.json"
CPU_COSTS = "0:0.055,8:0.089,32:0.141,128:0.321,256:0.559"  # fastapply-small, float32, 2 threads, idle


class CostedReplay(ReplayTarget):
    """A replayed target whose pass costs follow ``cost``."""

    def __init__(self, reference, stop_id, cost):
        super().__init__(reference, stop_id)
        self._cost = cost

    def cost(self, k: int) -> float:
        return self._cost(k)


def replay(tokenizer, tasks, shapes: dict) -> list[dict]:
    rows = []
    for task in tasks:
        plan = plan_edit(tokenizer, task.original, task.update, task.instruction, language=task.language)
        reference = answer_ids(tokenizer, plan.preset, task.expected)
        budget = max(plan.default_max_new_tokens, len(reference) + 256)
        row: dict = {"task": task.id, "tokens": len(reference)}
        for mode, context in {"informed": plan.context, "blind": dataclasses.replace(plan.context, risk={})}.items():
            for shape, cost in shapes.items():
                target = CostedReplay(reference, tokenizer.eos_token_id, cost)
                result = run_plan(target, tokenizer, dataclasses.replace(plan, context=context), "fastapply",
                                  budget, {tokenizer.eos_token_id}, trees=False)
                assert result.token_ids == reference[:len(result.token_ids)], task.id
                stats = result.stats
                row[f"{mode} {shape}"] = {"passes": stats.passes,
                                          "wasted": sum(stats.proposed) - sum(stats.accepted),
                                          "cost": round(sum(cost(k) for k in stats.proposed), 4)}
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="evals/tasks/suite.jsonl.gz")
    parser.add_argument("--model", default="fastapply-small", help="whose tokenizer")
    parser.add_argument("--cpu-costs", default=CPU_COSTS, help="k:seconds,... measured verify costs")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from fastapply.loading import resolve_named

    cpu = CostModel.monotone([(int(k), float(s)) for k, s in (p.split(":") for p in args.cpu_costs.split(","))])
    per_token = (cpu(256) - cpu(128)) / 128
    shapes = {"cpu": cpu, "gpu": lambda k: 1.0 + 0.002 * k}
    tokenizer = AutoTokenizer.from_pretrained(resolve_named(args.model))
    rows = replay(tokenizer, load_tasks(args.tasks), shapes)
    summary = {}
    print(f"{len(rows)} tasks of {args.tasks}, replayed")
    print(f"{'drafts':<9} {'shape':<5} {'passes':>7} {'wasted':>8} {'cost':>9} {'median cost / answer prefill':>29}")
    for mode in ("blind", "informed"):
        for shape in shapes:
            key = f"{mode} {shape}"
            total = {field: sum(row[key][field] for row in rows) for field in ("passes", "wasted", "cost")}
            over = (statistics.median(row[key]["cost"] / (row["tokens"] * per_token) for row in rows)
                    if shape == "cpu" else None)
            summary[key] = {**total, "cost": round(total["cost"], 2),
                            **({"median_cost_over_answer_prefill": round(over, 3)} if over else {})}
            print(f"{mode:<9} {shape:<5} {total['passes']:>7} {total['wasted']:>8} {total['cost']:>9.1f} "
                  f"{f'{over:.3f}' if over else '-':>29}")
    report = {"tasks": args.tasks, "cpu_costs": args.cpu_costs, "summary": summary, "rows": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
