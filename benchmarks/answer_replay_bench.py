"""fastapply's drafts replayed over a model's own answers: passes and modelled verify time, with the
output's history drafting a looping answer on (``draft.SpecEditsDrafter``: the history's echo beats
the pointers' runs) and without.

    fastapply eval --engine model --tasks evals/tasks/stratified.jsonl.gz --out runs/eval-small-model
    python benchmarks/answer_replay_bench.py runs/eval-small-model

A small model's commonest long answer is a loop: it writes a stretch of the file again and again
until its budget runs out. The eval's answers are what the model wrote, so replaying them (a target
that chooses each answer's tokens; no model runs) counts the passes the loop needs on them. Each pass
is charged this machine's measured verify costs for the model (``~/.cache/fastapply/verify-costs.json``,
written at the model's first run), or ``--costs k:seconds,...``. Prints a table; writes
``benchmarks/results/answer-replay.json``. Takes a minute or two on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RESULTS = Path(__file__).resolve().parent / "results" / "answer-replay.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="an eval's --out directory (engine model)")
    parser.add_argument("--tasks", default="evals/tasks/stratified.jsonl.gz")
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--costs", help="k:seconds,... verify costs (default: this machine's, measured)")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    from fastapply import draft
    from fastapply.apply import plan_edit, run_plan
    from fastapply.prompt import answer_ids
    from fastapply.costs import CostModel, cost_key, stored_costs
    from fastapply.loading import resolve_named
    from fastapply.replay import ReplayTarget
    from fastapply.tasks import load_tasks

    model_dir = resolve_named(args.model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if args.costs:
        cost = CostModel.monotone([(int(k), float(s)) for k, s in (p.split(":") for p in args.costs.split(","))])
    else:
        cost = (stored_costs(cost_key(model_dir, "cpu", torch.float32, screened=True))
                or stored_costs(cost_key(model_dir, "cpu", torch.float32)))
        if cost is None:
            raise SystemExit(f"no measured verify costs for {model_dir}: run the model once, or give --costs")
    costs = ",".join(f"{k}:{seconds}" for k, seconds in cost.points)

    class Costed(ReplayTarget):
        def cost(self, k: int) -> float:
            return cost(k)

    tasks = {task.id: task for task in load_tasks(args.tasks)}
    variants = {"history echo": draft.MAX_ECHO, "pointers only": 0}  # MAX_ECHO 0: the echo never wins
    rows = []
    for path in sorted(Path(args.results).glob("results/*/*.json")):
        result = json.loads(path.read_text())
        task = tasks.get(result["task"])
        if task is None or not result.get("output"):
            continue
        plan = plan_edit(tokenizer, task.original, task.update, task.instruction, language=task.language)
        answer = answer_ids(tokenizer, plan.preset, result["output"])
        row = {"task": task.id, "tokens": len(answer), "refused": bool(result.get("refused"))}
        for name, echo in variants.items():
            draft.MAX_ECHO = echo
            run = run_plan(Costed(answer, tokenizer.eos_token_id), tokenizer, plan, "fastapply", trees=False)
            assert run.token_ids == answer[:len(run.token_ids)]
            row[name] = {"passes": run.stats.passes, "seconds": round(sum(cost(k) for k in run.stats.proposed), 3)}
        draft.MAX_ECHO = variants["history echo"]
        rows.append(row)

    summary = {}
    print(f"{len(rows)} answers; verify costs {costs}")
    print(f"{'drafts':<14} {'answers':>8} {'passes':>7} {'modelled s':>11}")
    for subset, keep in (("all", lambda r: True), ("refused", lambda r: r["refused"]),
                         ("written", lambda r: not r["refused"])):
        chosen = [r for r in rows if keep(r)]
        for name in variants:
            total = {"answers": len(chosen), "passes": sum(r[name]["passes"] for r in chosen),
                     "seconds": round(sum(r[name]["seconds"] for r in chosen), 1)}
            summary[f"{subset}/{name}"] = total
            print(f"{subset + ': ' + name:<30} {total['answers']:>4} {total['passes']:>7} {total['seconds']:>11}")
    RESULTS.write_text(json.dumps({"results": args.results, "costs": costs, "summary": summary, "rows": rows},
                                  indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
