"""Mix training sets into one schedule for a CPU-sized fine-tuning run: short files only, real and
synthetic edits at a fixed share, languages other than Python kept whole.

    python -m data.mix --out runs/mix/train.jsonl.gz --max-lines 80 --examples 800 \\
        data/train/train.jsonl.gz runs/train-short/train.jsonl.gz

Inputs are training sets in the eval-task schema (``data.build_train``: ``source.kind`` is ``real`` or
``synthetic``). Examples whose original or expected file has more than ``--max-lines`` lines are left
out (a 2-core CPU trains ~150 tokens/s, so long files are for a GPU), except real edits, which are cut
to a window of top-level statements around their changes where one fits (``data.windows``). Of the
rest, every real edit is
kept, repeated up to ``--real-share`` of the output when real edits are scarce (repeats are counted in
the summary), then synthetic edits fill the remainder: every non-Python one first (the suite's other
languages are rarer in the inputs), then Python ones. Synthetic edits' templated instructions are
reworded or dropped as people word them (``data.instructions``; ``--keep-instructions`` leaves them).
With ``--instruction-only-share``, that share of the synthetic edits whose instruction can say the whole
change (a deletion, a rename, an import, a comment removed: ``data.instructions.alone``) lose their
snippet and keep the instruction alone, as a user who types "Delete the function save." sends it.
With ``--marker-indent-share``, that share of the edits has its update's lazy markers written at column
0 or at the indentation of the code line above them (``data.styles.reindent_markers``), as people
write them: the model learns to take the indentation of elided code from the original, not the marker.
Exact duplicates across inputs are dropped, and so are the edits of ``--exclude`` sets (an earlier
mix: a run that continues another one learns from edits it has not seen) and every edit of the
packages of ``--hold-out`` sets (validation sets built with another split); the output is shuffled by
``--seed``. It writes the output file and prints a summary; it builds no examples itself.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter
from collections.abc import Collection
from pathlib import Path

from data.instructions import alone, vary
from data.styles import MARKER_INDENTS, reindent_markers
from data.windows import whole_id, window
from fastapply.tasks import dump_tasks
from finetune.examples import read_records


def lines(record: dict) -> int:
    return max(record["original"].count("\n"), record["expected"].count("\n")) + 1


def mix(sets: list[list[dict]], max_lines: int, examples: int, real_share: float, seed: int,
        keep_instructions: bool = False, exclude: Collection[str] = (),
        held_out: Collection[str] = (), marker_indent_share: float = 0.0,
        instruction_only_share: float = 0.0) -> tuple[list[dict], dict]:
    """(records, summary): at most ``examples`` records of at most ``max_lines`` lines, as described above,
    none of the edits whose ids are in ``exclude`` (a window counts as the edit it was cut from) and none
    of the packages in ``held_out``; ``marker_indent_share`` of them with their markers reindented and
    ``instruction_only_share`` of those an instruction says in full with the instruction alone."""
    seen, pool, windows = set(), [], 0
    rng = random.Random(seed)
    excluded = {whole_id(i) for i in exclude}
    for records in sets:
        for r in records:
            if whole_id(r["id"]) in excluded or r["source"].get("package") in held_out:
                continue
            if lines(r) > max_lines and r["source"]["kind"] == "real" and (cut := window(r, max_lines, rng)):
                r, windows = cut, windows + 1
            key = hashlib.sha256(f"{r['original']}\0{r['expected']}".encode()).hexdigest()
            if key not in seen and lines(r) <= max_lines:
                seen.add(key)
                pool.append(r)
    rng.shuffle(pool)
    real = [r for r in pool if r["source"]["kind"] == "real"]
    synthetic = [r for r in pool if r["source"]["kind"] != "real"]
    real_target = min(round(examples * real_share), len(real) * 3)  # at most three passes over a real edit
    chosen_real = [real[i % len(real)] for i in range(real_target)] if real else []
    synthetic.sort(key=lambda r: r["language"] == "python")  # stable: other languages first, still shuffled
    chosen = chosen_real + synthetic[: examples - len(chosen_real)]
    rng.shuffle(chosen)
    alone_ids = set()
    for i, r in enumerate(chosen if instruction_only_share else ()):
        draw = random.Random(f"{seed}/{r['id']}/alone")
        if draw.random() < instruction_only_share and (instruction := alone(r["instruction"], draw)):
            chosen[i] = {**r, "update": "", "instruction": instruction}
            alone_ids.add(r["id"])
    if not keep_instructions:
        chosen = [r if r["id"] in alone_ids else
                  {**r, "instruction": vary(r["instruction"], random.Random(f"{seed}/{r['id']}"))} for r in chosen]
    reindented = 0
    for i, r in enumerate(chosen if marker_indent_share else ()):
        draw = random.Random(f"{seed}/{r['id']}/markers")
        if draw.random() < marker_indent_share:
            update = reindent_markers(r["update"], r["language"], draw.choice(MARKER_INDENTS))
            if update != r["update"]:
                chosen[i], reindented = {**r, "update": update}, reindented + 1
    summary = {
        "examples": len(chosen),
        "distinct_real": len({r["id"] for r in chosen_real}),
        "real_windows": windows,
        "real_repeats": len(chosen_real) - len({r["id"] for r in chosen_real}),
        "by_kind": dict(Counter(r["source"]["kind"] for r in chosen)),
        "by_language": dict(Counter(r["language"] for r in chosen).most_common()),
        "by_transform": dict(Counter(r["source"].get("transform", "") for r in chosen).most_common()),
        "with_instruction": sum(bool(r["instruction"].strip()) for r in chosen),
        "instruction_only": len(alone_ids),
        "markers_reindented": reindented,
        "max_lines": max_lines,
    }
    return chosen, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="training sets (.jsonl or .jsonl.gz)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-lines", type=int, default=80)
    parser.add_argument("--examples", type=int, default=800)
    parser.add_argument("--real-share", type=float, default=0.2, help="real : synthetic 1:4 is 0.2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep-instructions", action="store_true",
                        help="leave synthetic edits' templated instructions as they are")
    parser.add_argument("--exclude", nargs="+", type=Path, default=(),
                        help="training sets (an earlier mix) whose edits are left out: what a run already saw")
    parser.add_argument("--hold-out", nargs="+", type=Path, default=(),
                        help="validation sets whose packages are left out, so that they stay held out")
    parser.add_argument("--marker-indent-share", type=float, default=0.0,
                        help="share of edits whose update has its markers at column 0 or the line above's indentation")
    parser.add_argument("--instruction-only-share", type=float, default=0.0,
                        help="share of synthetic edits an instruction says in full that keep the instruction alone")
    args = parser.parse_args(argv)
    exclude = {r["id"] for path in args.exclude for r in read_records(path)}
    held_out = {r["source"]["package"] for path in args.hold_out for r in read_records(path)}
    records, summary = mix([read_records(p) for p in args.inputs], args.max_lines, args.examples,
                           args.real_share, args.seed, args.keep_instructions, exclude, held_out,
                           args.marker_indent_share, args.instruction_only_share)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dump_tasks(args.out, records)
    args.out.with_suffix("").with_suffix(".summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
