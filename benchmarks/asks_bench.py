"""Edits made from an instruction alone: validated with and without ``fastapply.asks``' checks, and applied
with no model by ``fastapply.instructed``.

With no snippet, nothing anchors the snippet-based checks, so an answer that deletes the wrong function
(or the file) passes them. For each file it is given, the synthetic transforms of ``data.transforms``
(a function deleted, a name renamed, an import added, a comment removed) make instruction-only edits,
worded as users word them (``data.instructions.alone``). Each edit's known answer must pass validation
(a refusal is a false one); the original unchanged, and another edit of the same file in its place (a
wrong answer), must be refused. ``fastapply.instructed`` applies each edit with no model: its certain
answers are counted as the known answer or another (an import's place in its group is a choice), the
rest as left to a model. ``--stored`` instead re-validates the answers a ``fastapply eval --out
DIR`` run kept for tasks of an instruction alone, counting the wrong ones written.

    python benchmarks/asks_bench.py                                  # the suite's 450 files, ~6 minutes
    python benchmarks/asks_bench.py --stored runs/eval-alone --tasks alone.jsonl.gz

Prints a table; writes ``benchmarks/results/asks.json`` (``asks-stored.json`` with ``--stored``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from collections import Counter
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fastapply.validate as validation  # noqa: E402
from data import transforms  # noqa: E402
from data.instructions import alone  # noqa: E402
from fastapply.evalconfig import git_commit  # noqa: E402
from fastapply.evaluate import default_tasks_path  # noqa: E402
from fastapply.instructed import apply  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = (transforms.delete_function, transforms.rename_symbol, transforms.add_import, transforms.remove_comment)


def refused(original: str, output: str, instruction: str, language: str | None, asks: bool) -> bool:
    """Whether validation refuses ``output`` for an instruction alone; ``asks=False`` leaves out the
    checks of ``fastapply.asks`` (the validation before them)."""
    with contextlib.ExitStack() as stack:
        if not asks:
            stack.enter_context(mock.patch.object(validation, "undone", lambda *args: None))
            stack.enter_context(mock.patch.object(validation, "unasked_deletions", lambda *args: ([], [])))
        return bool(validation.validate(original, output, "", language, instruction=instruction))


def synthetic(tasks, seed: int) -> tuple[Counter, list]:
    rng, counts, false = random.Random(seed), Counter(), []
    for task in tasks:
        for text in (task.original, task.expected):
            edits = []
            for kind in KINDS:
                for draw in range(2):
                    edit = kind(text, task.language, random.Random(draw))
                    if edit and edit.instruction and edit.expected != edit.original and edit not in edits:
                        edits.append(edit)
            for edit in edits:
                worded = alone(edit.instruction, rng) or edit.instruction
                counts[edit.transform] += 1
                if refused(edit.original, edit.expected, worded, task.language, True):
                    counts["right refused"] += 1
                    false.append({"task": task.id, "instruction": worded})
                counts["unchanged written"] += not refused(edit.original, edit.original, worded, task.language, True)
                applied = apply(edit.original, worded, task.language)
                outcome = "left to a model" if applied.confidence != "certain" else (
                    "known answer" if applied.text == edit.expected else "another answer")
                counts[f"{edit.transform} applied: {outcome}"] += 1
                other = next((o for o in edits if o.original == edit.original and o.expected != edit.expected), None)
                if other is not None:
                    counts["wrong answers"] += 1
                    for asks in (False, True):
                        written = not refused(edit.original, other.expected, worded, task.language, asks)
                        counts[f"wrong written{'' if asks else ' without asks'}"] += written
    return counts, false


def stored(directory: Path, tasks_path: Path) -> Counter:
    tasks, counts = {task.id: task for task in load_tasks(tasks_path)}, Counter()
    for path in sorted(directory.glob("results/*/*.json")):
        record = json.loads(path.read_text())
        task = tasks.get(record["task"])
        if task is None or task.update.strip() or record["output"] is None:
            continue
        counts["answers"] += 1
        exact = record["output"] == task.expected
        counts["exact"] += exact
        counts["unchanged"] += record["output"] == task.original
        for asks in (False, True):
            written = not refused(task.original, record["output"], task.instruction, task.language, asks)
            counts[f"{'right' if exact else 'wrong'} written{'' if asks else ' without asks'}"] += written
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, help="files to make edits of (eval schema; default: the suite)")
    parser.add_argument("--stored", type=Path, help="a `fastapply eval --out` directory to re-validate")
    parser.add_argument("--seed", type=int, default=65)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.stored is not None:
        if args.tasks is None:
            parser.error("--stored needs the --tasks the eval ran")
        counts, false, out = stored(args.stored, args.tasks), [], args.out or RESULTS / "asks-stored.json"
    else:
        tasks = load_tasks(args.tasks or default_tasks_path())
        (counts, false), out = synthetic(tasks, args.seed), args.out or RESULTS / "asks.json"
    width = max(map(len, counts))
    for key, value in sorted(counts.items()):
        print(f"{key:<{width}}  {value:>6}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"git_commit": git_commit(), "counts": dict(sorted(counts.items())), "false_refusals": false,
                               "stored": str(args.stored) if args.stored else None,
                               "tasks": str(args.tasks or default_tasks_path())}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
