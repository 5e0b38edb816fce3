"""Edit tasks on disk: the eval suite's schema (DESIGN.md §9), read and written as JSON lines.

One task a line::

    {"id": str, "language": str, "path": str, "original": str, "update": str, "instruction": str,
     "expected": str, "source": {"package": str, "from": str, "to": str, "license": str}}

``load_tasks`` reads ``.jsonl`` or ``.jsonl.gz`` and refuses a malformed line with a message naming the
file and line; ``dump_tasks`` writes them back (gzip output is byte-for-byte reproducible). Training
records use the same fields, so this module reads them too; ``source`` may carry extra string fields.
This module does not run, score or build tasks.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fastapply.errors import FastapplyError
from fastapply.syntax import LANGUAGES

TEXT_FIELDS = ("id", "language", "path", "original", "update", "instruction", "expected")
SOURCE_FIELDS = ("package", "from", "to", "license")


@dataclass(frozen=True)
class Task:
    id: str
    language: str  # a name from fastapply.syntax.LANGUAGES
    path: str  # the file's path inside its package (gives the extension)
    original: str  # the file before the edit (LF text)
    update: str  # the update snippet (or the whole edit) given to the apply engine
    instruction: str  # natural-language instruction; "" when there is none
    expected: str  # the file after the edit: the reference answer
    source: Mapping[str, str]  # at least package, from, to, license

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in TEXT_FIELDS} | {"source": dict(self.source)}


def task_from_json(record: object, where: str = "task") -> Task:
    """A ``Task`` from one decoded JSON record; ``FastapplyError`` naming the first problem otherwise."""
    if not isinstance(record, dict):
        raise FastapplyError(f"{where}: expected a JSON object, got {type(record).__name__}")
    for name in TEXT_FIELDS:
        if name not in record:
            raise FastapplyError(f"{where}: missing field {name!r}")
        if not isinstance(record[name], str):
            raise FastapplyError(f"{where}: field {name!r} must be a string")
    if record["language"] not in LANGUAGES:
        raise FastapplyError(
            f"{where}: unknown language {record['language']!r}; known: {', '.join(sorted(LANGUAGES))}"
        )
    source = record.get("source")
    if not isinstance(source, dict):
        raise FastapplyError(f"{where}: field 'source' must be an object with {', '.join(SOURCE_FIELDS)}")
    for name in SOURCE_FIELDS:
        if not isinstance(source.get(name), str):
            raise FastapplyError(f"{where}: source field {name!r} missing or not a string")
    if not all(isinstance(value, str) for value in source.values()):
        raise FastapplyError(f"{where}: source values must be strings")
    return Task(**{name: record[name] for name in TEXT_FIELDS}, source=dict(source))


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def load_tasks(path: str | Path) -> list[Task]:
    """All tasks in a ``.jsonl`` or ``.jsonl.gz`` file, in file order; blank lines are skipped.

    Duplicate ids are refused, since results are stored per task id.
    """
    path = Path(path)
    tasks: list[Task] = []
    seen: set[str] = set()
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise FastapplyError(f"{where}: not valid JSON ({exc.msg})") from None
                task = task_from_json(record, where)
                if task.id in seen:
                    raise FastapplyError(f"{where}: duplicate task id {task.id!r}")
                seen.add(task.id)
                tasks.append(task)
    except FileNotFoundError:
        raise FastapplyError(f"cannot read tasks from {path}: no such file") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise FastapplyError(f"cannot read tasks from {path}: {exc}") from None
    return tasks


def dump_tasks(path: str | Path, tasks: Iterable[Task | Mapping]) -> int:
    """Write tasks (``Task`` objects or their JSON records) one a line; gzip when the name ends in ``.gz``.

    Returns the number written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(task.to_json() if isinstance(task, Task) else dict(task)) + "\n"
        for task in tasks
    ]
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=9, mtime=0)  # mtime=0: the same tasks give the same bytes
    path.write_bytes(data)
    return len(lines)
