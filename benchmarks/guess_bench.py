"""A file's language told from its text alone (``syntax.guess_language``), as ``fastapply serve`` tells it
for an edit sent as a chat message in the apply form (no file name), and what that gives the merge engine.

For each task: the language guessed from the original file against the task's (right, none, wrong), the
time the guess took, and the merge engine's answer (``engine.resolve_edit`` with ``engine: merge``: what
the apply form returns with no model run when the model is fastapply-small) in the task's language, in the
guessed one and in none: certain, and certain and the known answer.

    python benchmarks/guess_bench.py                     # the suite's 450 tasks, ~5 minutes

Prints a table; writes ``benchmarks/results/guess.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.engine import resolve_edit  # noqa: E402
from fastapply.errors import FastapplyError  # noqa: E402
from fastapply.evalconfig import git_commit  # noqa: E402
from fastapply.evaluate import default_tasks_path  # noqa: E402
from fastapply.syntax import guess_language  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def merged(task, language: str | None) -> str:
    """``certain-exact``, ``certain-other`` or ``none``: the merge engine's answer in ``language``."""
    try:
        outcome = resolve_edit(task.original, task.update, language, "merge", instruction=task.instruction)
    except FastapplyError:  # refused as uncertain, or an instruction the merge engine does not apply
        return "none"
    return "certain-exact" if outcome.text == task.expected else "certain-other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, help="tasks (eval schema; default: the suite)")
    parser.add_argument("--out", type=Path, default=RESULTS / "guess.json")
    args = parser.parse_args()
    tasks = load_tasks(args.tasks or default_tasks_path())
    guesses, merges, seconds, wrong = Counter(), Counter(), [], []
    for task in tasks:
        start = time.perf_counter()
        guessed = guess_language(task.original)
        seconds.append(time.perf_counter() - start)
        told = "right" if guessed == task.language else "none" if guessed is None else "wrong"
        guesses[f"{task.language} {told}"] += 1
        guesses[f"all {told}"] += 1
        if told == "wrong":
            wrong.append({"task": task.id, "language": task.language, "guessed": guessed})
        for setting, language in (("task's", task.language), ("guessed", guessed), ("none", None)):
            merges[f"{setting} {merged(task, language)}"] += 1
    timing = {"median_ms": round(statistics.median(seconds) * 1000, 1), "max_ms": round(max(seconds) * 1000, 1)}
    width = max(map(len, [*guesses, *merges]))
    for key, value in [*sorted(guesses.items()), *sorted(merges.items())]:
        print(f"{key:<{width}}  {value:>5}")
    print(f"guess time: median {timing['median_ms']} ms, max {timing['max_ms']} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"git_commit": git_commit(), "tasks": str(args.tasks or default_tasks_path()),
                                    "guesses": dict(sorted(guesses.items())), "merges": dict(sorted(merges.items())),
                                    "wrong": wrong, "guess_time": timing}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
