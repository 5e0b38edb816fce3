"""``fastapply batch EDITS.jsonl``: many (file, edit) pairs with one model load or one server.

Each input line is ``{"file": PATH, "edit": TEXT, "instruction"?: TEXT}`` (paths relative to the
current directory). Each output record says what happened to one input line, in input order:
``{"line", "file", "ok", "changed", "written", "text"?, "stats"}`` or ``{"line", "file", "ok": false,
"error", "exit_code"}``. A record that fails (unreadable file, refused result, server error) is
reported and the others go on. With ``in_place`` changed files are replaced atomically.
This module does not print; the CLI renders progress and writes the records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fastapply import fileio
from fastapply.errors import FastapplyError, RefusedError, UsageError

# apply(original, update, instruction) -> (new file, closed, stats)
Applier = Callable[[str, str, str], tuple[str, bool, dict]]


@dataclass(frozen=True)
class BatchItem:
    line: int  # 1-based line number in the input
    file: str
    edit: str
    instruction: str = ""
    problem: str = ""  # why the line cannot be used, if it cannot


def read_items(text: str) -> list[BatchItem]:
    """The records of a JSONL text; blank lines are skipped, a bad line becomes an item with a problem."""
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            items.append(BatchItem(number, "", "", problem=f"line {number} is not JSON: {exc}"))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("file"), str) or not isinstance(
                record.get("edit"), str) or not isinstance(record.get("instruction", ""), str):
            items.append(BatchItem(number, str(record.get("file", "")) if isinstance(record, dict) else "", "",
                                   problem=f'line {number} needs {{"file": str, "edit": str, "instruction"?: str}}'))
            continue
        items.append(BatchItem(number, record["file"], record["edit"], record.get("instruction", "")))
    return items


def apply_item(item: BatchItem, apply: Applier, in_place: bool) -> dict:
    """Apply one item; the record describing the outcome (never raises a fastapply error)."""
    try:
        if item.problem:
            raise UsageError(item.problem)
        if not item.edit.strip():
            raise UsageError("the edit is empty")
        original, fmt = fileio.read_text(item.file)
        text, closed, stats = apply(original, item.edit, item.instruction)
        if not closed:
            raise RefusedError("the model's answer was cut off before its end; nothing was written", ("truncated",))
        changed = text != original
        if in_place and changed:
            fileio.write_atomic(item.file, fileio.encode(text, fmt))
    except FastapplyError as exc:
        return {"line": item.line, "file": item.file, "ok": False, "error": str(exc), "exit_code": exc.exit_code}
    record = {"line": item.line, "file": item.file, "ok": True, "changed": changed, "written": in_place and changed}
    if not in_place:
        record["text"] = text
    return {**record, "stats": stats}


def run_batch(items: list[BatchItem], apply: Applier, in_place: bool = False, workers: int = 1) -> Iterator[dict]:
    """The record of every item, in input order; ``workers`` > 1 sends items concurrently (a server)."""
    if workers <= 1:
        for item in items:
            yield apply_item(item, apply, in_place)
        return
    targets = [os.path.realpath(item.file) for item in items if not item.problem]
    if in_place and len(set(targets)) < len(targets):
        raise UsageError("with --in-place and --workers, each file may appear only once (edits to one file "
                         "would race); run them with --workers 1")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(lambda item: apply_item(item, apply, in_place), items)


def local_applier(model: str, device: str = "auto", dtype: str = "auto", adapter: str | None = None,
                  preset: str = "default", policy: str = "fastapply", max_new_tokens: int | None = None,
                  temperature: float = 0.0, seed: int | None = None) -> Applier:
    """An applier over one model loaded now and reused for every item."""
    from fastapply.apply import apply_edit
    from fastapply.target import load_model

    lm, tokenizer = load_model(model, device, dtype, adapter)

    def apply(original: str, update: str, instruction: str) -> tuple[str, bool, dict]:
        result = apply_edit(lm, tokenizer, original, update, instruction, preset=preset, policy=policy,
                            max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
        return result.text, result.closed, result.stats.as_dict()

    return apply
