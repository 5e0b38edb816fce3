"""Write the eval suite's original files into a folder, one per task (duplicates once), by language, with
their languages' extensions: code to draw generated edits from (``merge_bench.py --sources DIR``).

    python benchmarks/suite_sources.py runs/s75/code
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.tasks import load_tasks  # noqa: E402

SUITE = Path(__file__).resolve().parent.parent / "evals" / "tasks" / "suite.jsonl.gz"
EXTENSIONS = {"python": "py", "javascript": "js", "typescript": "ts", "tsx": "tsx", "go": "go", "rust": "rs",
              "java": "java", "c": "c", "cpp": "cpp", "ruby": "rb"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write (LANGUAGE/NNN.EXT under it)")
    parser.add_argument("--tasks", type=Path, default=SUITE)
    args = parser.parse_args()
    seen: set[str] = set()
    for task in load_tasks(args.tasks):
        if task.original in seen:
            continue
        seen.add(task.original)
        folder = args.out / task.language
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{len(seen):03d}.{EXTENSIONS[task.language]}").write_text(task.original)
    print(f"{len(seen)} files under {args.out}")


if __name__ == "__main__":
    main()
