"""How soon an answer sure to be refused is stopped: each task applied as ``--engine auto`` applies it
(the merge engine's candidate as the first draft), once whole, as ``--force`` does, and once with the
``validate.RefusalWatch`` that the CLI, batch and the server give a model run, which stops the answer
at the first line that stays a change not asked for in any answer going on from it.

    python benchmarks/refusal_bench.py                   # three suite files the shipped model loops on
    python benchmarks/refusal_bench.py --tasks evals/tasks/stratified.jsonl.gz --all
    python benchmarks/refusal_bench.py --stored runs/eval-auto   # where the watch stops an eval run's answers

``--stored`` runs no model: it feeds the outputs a ``fastapply eval --out DIR`` run kept, line by line,
to the watch, and counts where it would have stopped them, checking that it stops none that was written
or refused without the problem it names.

The watched run must write a prefix of the whole run's tokens, and the whole answer must be refused for
the problem the watch named (the benchmark fails otherwise). Prints a table; writes
``benchmarks/results/refusal.json``. About 5 minutes for the three default tasks on 2 cores, float32.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.apply import apply_edit  # noqa: E402
from fastapply.evaluate import default_tasks_path  # noqa: E402
from fastapply.loading import load_model  # noqa: E402
from fastapply.merge import merge  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402
from fastapply.validate import RefusalWatch, validate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "refusal.json"
LOOPING = ("pypi-black-26.10.0-tests-test_ranges.py",
           "pypi-oauthlib-4.0.0-tests-openid-connect-core-grant_types-test_implicit.py",
           "npm-debug-4.4.0-src-common.js")


def run_task(model, tokenizer, task) -> dict:
    """One task whole and watched: tokens, seconds, and what the watch named."""
    merged = merge(task.original, task.update, task.language)
    whole = apply_edit(model, tokenizer, task.original, task.update, task.instruction, merged=merged.text)
    watch = RefusalWatch(task.original, task.update, task.language, task.instruction)
    watched = apply_edit(model, tokenizer, task.original, task.update, task.instruction, merged=merged.text,
                         watch=watch)
    if watched.token_ids != whole.token_ids[:len(watched.token_ids)]:
        raise SystemExit(f"{task.id}: the watched run wrote other tokens than the whole one")
    problems = [p.name for p in validate(task.original, whole.text, task.update, task.language, whole.closed,
                                         task.instruction, merged)]
    if watched.stopped is not None and watched.stopped.name not in problems:
        raise SystemExit(f"{task.id}: the watch named {watched.stopped.name}, the whole answer has {problems}")
    return {"task": task.id, "lines": task.original.count("\n"), "merge": merged.confidence,
            "whole_tokens": whole.stats.tokens, "whole_s": round(whole.stats.seconds, 2),
            "whole_problems": problems, "watched_tokens": watched.stats.tokens,
            "watched_s": round(watched.stats.seconds, 2),
            "stopped_by": watched.stopped.message if watched.stopped is not None else None}


def stored(run_dir: Path, tasks: dict) -> dict:
    """Where the watch stops the answers an eval run stored: how many, after what share of their lines,
    and the decode time of the refused ones (all and, scaled by the lines not written, about saved)."""
    shares, refused_s, saved_s, answers = [], 0.0, 0.0, 0
    for path in sorted((run_dir / "results").glob("*/*.json")):
        row = json.loads(path.read_text())
        if row.get("output") is None or "tokens" not in (row.get("speed") or {}):
            continue  # no model output (a certain merge, or an error)
        answers += 1
        task = tasks[row["task"]]
        lines = row["output"].split("\n")
        watch = RefusalWatch(task.original, task.update, task.language, task.instruction)
        at = next((i for i, line in enumerate(lines) if watch.lines([line]) is not None), None)
        refused_s += row["speed"]["seconds"] if row.get("refused") else 0.0
        if at is None:
            continue
        if not row.get("refused") or watch.problem.name not in (row.get("validation") or []):
            raise SystemExit(f"{path}: the watch stops an answer not refused for {watch.problem.name}")
        shares.append((at + 1) / len(lines))
        saved_s += row["speed"]["seconds"] * (1 - shares[-1])
    shares.sort()
    return {"run": str(run_dir), "answers": answers, "stopped": len(shares),
            "median_share_written": round(shares[len(shares) // 2], 3) if shares else None,
            "refused_s": round(refused_s, 1), "about_saved_s": round(saved_s, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="fastapply-small")
    parser.add_argument("--adapter")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tasks", default=str(default_tasks_path()), help="a task file (default: the suite)")
    parser.add_argument("--ids", nargs="+", default=list(LOOPING), help="the tasks to run (default: three that loop)")
    parser.add_argument("--all", action="store_true", help="every task of --tasks instead of --ids")
    parser.add_argument("--stored", nargs="+", type=Path, help="eval run directories: their stored answers")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    tasks = load_tasks(args.tasks)
    if args.stored:
        by_id = {task.id: task for task in tasks}
        for run_dir in args.stored:
            print(json.dumps(stored(run_dir, by_id)))
        return 0
    if not args.all:
        tasks = [task for task in tasks if task.id in set(args.ids)]
        if len(tasks) != len(set(args.ids)):
            parser.error(f"not in {args.tasks}: {sorted(set(args.ids) - {task.id for task in tasks})}")
    model, tokenizer = load_model(args.model, args.device, "float32", args.adapter)
    rows = []
    print(f"{'task':60} {'lines':>5} {'whole':>13} {'watched':>13}  stopped by")
    for task in tasks:
        row = run_task(model, tokenizer, task)
        rows.append(row)
        print(f"{task.id[:60]:60} {row['lines']:5d} {row['whole_tokens']:6d} {row['whole_s']:5.1f}s "
              f"{row['watched_tokens']:6d} {row['watched_s']:5.1f}s  {(row['stopped_by'] or '-')[:70]}")
    whole_s, watched_s = sum(row["whole_s"] for row in rows), sum(row["watched_s"] for row in rows)
    stopped = sum(row["stopped_by"] is not None for row in rows)
    print(f"{len(rows)} tasks, {stopped} stopped early: {watched_s:.1f} s watched against {whole_s:.1f} s whole")
    Path(args.out).write_text(json.dumps({"model": args.model, "adapter": args.adapter, "device": args.device,
                                          "tasks": args.tasks, "rows": rows, "whole_s": round(whole_s, 2),
                                          "watched_s": round(watched_s, 2)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
