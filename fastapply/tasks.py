"""Edit tasks on disk: the eval suite's schema (DESIGN.md §9), one JSON object a line.

    {"id": str, "language": str, "path": str, "original": str, "update": str, "instruction": str,
     "expected": str, "source": {"package": str, "from": str, "to": str, "license": str}}

``load_tasks`` reads ``.jsonl`` or ``.jsonl.gz``. This module does not run, score or build tasks.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fastapply.errors import FastapplyError

TEXT_FIELDS = ("id", "language", "path", "original", "update", "instruction", "expected")


@dataclass(frozen=True)
class Task:
    id: str
    language: str  # a name from fastapply.syntax.LANGUAGES
    path: str  # the file's path inside its package
    original: str  # the file before the edit (LF text)
    update: str  # the update snippet given to the apply engine
    instruction: str  # "" when there is none
    expected: str  # the file after the edit: the reference answer
    source: Mapping[str, str]  # package, from, to, license


def load_tasks(path: str | Path) -> list[Task]:
    """All tasks in a ``.jsonl`` or ``.jsonl.gz`` file, in file order; blank lines are skipped."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    tasks: list[Task] = []
    try:
        with opener(path, "rt", encoding="utf-8", newline="\n") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    tasks.append(Task(**{name: record[name] for name in TEXT_FIELDS},
                                      source=dict(record.get("source", {}))))
                except (ValueError, KeyError, TypeError) as exc:
                    raise FastapplyError(f"{path}:{number}: not a task in the eval schema ({exc})") from None
    except OSError as exc:
        raise FastapplyError(f"cannot read tasks from {path}: {exc.strerror or exc}") from None
    return tasks
