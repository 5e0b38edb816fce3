"""``fastapply batch EDITS.jsonl``: many (file, edit) pairs with one model load or one server.

Each input line is ``{"file": PATH, "edit": TEXT, "instruction"?: TEXT}`` (paths relative to the
current directory). Each edit goes through ``engine.resolve_edit``, as ``fastapply FILE --edit`` does:
the merge engine, the model (drafting from the merge under ``auto``) and validation. Each output record
says what happened to one input line, in input order: ``{"line", "file", "ok": true, "changed",
"written", "engine", "problems", "text"?, "stats"}`` or ``{"line", "file", "ok": false, "error",
"exit_code", "reasons"?}`` (``reasons`` names the failed checks of a refused edit). A record that fails
(unreadable file, refused result, server error) is reported and the others go on. With ``in_place``
changed files are replaced atomically. A diff of several files (``patch_items``) is a batch too: each
file's part is that file's edit; and so is a chat model's answer (``answer_items``): each file its code
blocks name. This module does not print; the CLI renders progress and
writes the records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fastapply import fileio
from fastapply.engine import ModelRun, resolve_edit
from fastapply.errors import FastapplyError, RefusedError, UsageError
from fastapply.answer import split_answer
from fastapply.diffs import split_files
from fastapply.syntax import language_for_path
from fastapply.validate import RefusalWatch

# run_model(original, update, instruction, merged, watch, language) -> ModelRun: a local model or a server;
# ``merged`` is the merge engine's candidate for the new file (the first draft), or None; ``watch`` a
# RefusalWatch that may stop the answer early, or None; ``language`` the file's, with which the prompt
# shows the update's markers as the model was trained to read them (``merge.restyle_markers``), or None
ModelRunner = Callable[[str, str, str, str | None, RefusalWatch | None, str | None], ModelRun]


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


def patch_items(diff: str) -> list[BatchItem]:
    """The items of a diff of one or more files (``diffs.split_files``): each file's part is its edit, its
    line the one the part starts on."""
    return [BatchItem(line, path, part) for line, path, part in split_files(diff)]


def answer_items(text: str) -> list[BatchItem]:
    """The items of a chat model's answer (``answer.split_answer``): each file its code blocks name is one
    item, its edit the answer (of which ``engine.read_edit`` takes that file's blocks), its line the one
    its first block opens on."""
    return [BatchItem(line, path, text) for line, path in split_answer(text)]


def apply_item(item: BatchItem, run_model: ModelRunner | None, in_place: bool, engine: str = "auto",
               force: bool = False, merge_first: bool = False, focus: bool = True) -> dict:
    """Apply one item with ``engine`` (``run_model`` None: no model; ``merge_first``: a certain merge
    before the model, see ``engine.resolve_edit``); the record describing the outcome (never raises a
    fastapply error)."""
    try:
        if item.problem:
            raise UsageError(item.problem)
        original, fmt = fileio.read_text(item.file)
        language = language_for_path(item.file)
        model = None if run_model is None else lambda shown, update, instruction, merged, watch: run_model(
            shown, update, instruction, merged, watch, language)
        outcome = resolve_edit(original, item.edit, language, engine, model, force, item.instruction, merge_first,
                               focus, item.file)
        changed = outcome.text != original
        if in_place and changed:
            fileio.write_atomic(item.file, fileio.encode(outcome.text, fmt))
    except FastapplyError as exc:
        failed = {"line": item.line, "file": item.file, "ok": False, "error": str(exc), "exit_code": exc.exit_code}
        return {**failed, "reasons": list(exc.reasons)} if isinstance(exc, RefusedError) else failed
    record = {"line": item.line, "file": item.file, "ok": True, "changed": changed, "written": in_place and changed,
              "engine": outcome.engine, "problems": [p.name for p in outcome.problems]}  # problems: with force only
    if not in_place:
        record["text"] = outcome.text
    return {**record, "stats": outcome.model_run.stats if outcome.model_run is not None else None}


def run_batch(items: list[BatchItem], run_model: ModelRunner | None, in_place: bool = False, workers: int = 1,
              engine: str = "auto", force: bool = False, merge_first: bool = False,
              focus: bool = True) -> Iterator[dict]:
    """The record of every item, in input order; ``workers`` > 1 sends items concurrently (a server)."""
    if workers <= 1:
        for item in items:
            yield apply_item(item, run_model, in_place, engine, force, merge_first, focus)
        return
    targets = [os.path.realpath(item.file) for item in items if not item.problem]
    if in_place and len(set(targets)) < len(targets):
        raise UsageError("with --in-place and --workers, each file may appear only once (edits to one file "
                         "would race); run them with --workers 1")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(lambda item: apply_item(item, run_model, in_place, engine, force, merge_first, focus),
                            items)


def local_runner(model: str, device: str = "auto", dtype: str = "auto", adapter: str | None = None,
                 preset: str = "default", policy: str = "fastapply", max_new_tokens: int | None = None,
                 temperature: float = 0.0, seed: int | None = None, draft_model: str | None = None,
                 medusa: str | None = None, on_pass=None) -> ModelRunner:
    """A model runner over one model (and its draft model or Medusa heads) loaded now and reused for
    every item; ``on_pass(output, stats)`` is called after each forward pass."""
    from fastapply.apply import apply_edit, load_model_drafters
    from fastapply.loading import load_model

    lm, tokenizer = load_model(model, device, dtype, adapter)
    models = load_model_drafters(lm, tokenizer, draft_model, medusa)

    def run_model(original: str, update: str, instruction: str, merged: str | None,
                  watch: RefusalWatch | None = None, language: str | None = None) -> ModelRun:
        result = apply_edit(lm, tokenizer, original, update, instruction, preset=preset, policy=policy, merged=merged,
                            max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, models=models,
                            on_pass=on_pass, watch=watch, language=language)
        return ModelRun.of(result)

    return run_model


def remote_runner(backend) -> ModelRunner:
    """A model runner over a ``client.RemoteBackend`` (one server, shared by every worker thread); the server
    writes each answer whole, so a watch is not used."""
    return lambda original, update, instruction, merged, watch=None, language=None: ModelRun(
        *backend(original, update, instruction, merged, language))
