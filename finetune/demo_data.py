"""Stand-in training records for smoke runs and throughput figures, made offline from the Python
standard library: each adds one comment line above a function. Not a training set -- the real one
comes from ``data/build_train.py`` -- but records of the same schema and realistic lengths.

    python -m finetune.demo_data --out runs/demo     # writes runs/demo/train.jsonl and runs/demo/valid.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from fastapply.snippet import make_snippet
from finetune.scratch import stdlib_corpus

DEF = re.compile(r"^(\s*)def (\w+)\(", re.MULTILINE)


def demo_record(text: str, rng: random.Random) -> dict | None:
    """One record adding a comment above a randomly chosen function of ``text``; None when it has none."""
    functions = list(DEF.finditer(text))
    if not functions:
        return None
    match = rng.choice(functions)
    indent, name = match.group(1), match.group(2)
    note = f"{indent}# {name} is part of the public interface; keep its signature stable.\n"
    expected = text[:match.start()] + note + text[match.start():]
    return {
        "original": text,
        "update": make_snippet(text, expected, "python"),
        "instruction": f"Add a comment above {name} saying its signature must stay stable.",
        "expected": expected,
        "source": {"package": "python-stdlib", "kind": "demo"},
    }


def head(text: str, max_lines: int) -> str:
    """``text`` cut before the last top-level line within its first ``max_lines`` lines (whole when short).
    E.g. max_lines=3: "a\n b\nc\n d\n" -> "a\n b\n"."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= max_lines:
        return text
    cut = max((i for i in range(1, max_lines + 1) if lines[i][:1] not in ("", " ", "\t", "\n")), default=max_lines)
    return "".join(lines[:cut])


def demo_records(count: int, max_lines: int = 150, seed: int = 0) -> list[dict]:
    """Up to ``count`` records from the heads (``max_lines``) of standard-library modules."""
    rng = random.Random(seed)
    texts = [head(t, max_lines) for t in stdlib_corpus(limit=1000)]
    records = [r for r in (demo_record(t, rng) for t in texts if t.count("\n") >= 20) if r is not None]
    return records[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="directory for train.jsonl and valid.jsonl")
    parser.add_argument("--train", type=int, default=48, help="training records")
    parser.add_argument("--valid", type=int, default=8, help="validation records")
    args = parser.parse_args()
    records = demo_records(args.train + args.valid)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, part in (("train", records[:args.train]), ("valid", records[args.train:])):
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
        print(f"wrote {args.out / f'{name}.jsonl'}: {len(part)} records")


if __name__ == "__main__":
    main()
