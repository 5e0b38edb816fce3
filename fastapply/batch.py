"""``fastapply batch EDITS.jsonl``: many (file, edit) pairs with one model load or one server.

Each input line is ``{"file": PATH, "edit": TEXT, "instruction"?: TEXT}`` (paths relative to the
current directory). Each edit goes through ``engine.resolve_edit``, as ``fastapply FILE --edit`` does:
the merge engine, the model (drafting from the merge under ``auto``) and validation. Each output record
says what happened to one input line, in input order: ``{"line", "file", "ok": true, "changed",
"written", "engine", "problems", "text"?, "stats"}`` or ``{"line", "file", "ok": false, "error",
"exit_code", "reasons"?}`` (``reasons`` names the failed checks of a refused edit). A record that fails
(unreadable file, refused result, server error) is reported and the others go on. With ``in_place``
changed files are replaced atomically. A diff of several files (``items.patch_items``) is a batch too: each
file's part is that file's edit, or creates, deletes, moves or copies the file (its record then says
``"created": true``, ``"deleted": true``, ``"moved_from": PATH`` or ``"copied_from": PATH``; a file is
changed only under the current directory, and deleted only where it holds what the diff shows it held;
a binary file's part is git's binary patch, ``binpatch``; a symbolic link's is made a link); and so
is a chat model's answer (``items.answer_items``): each file its code blocks name. Each item is planned
(``plan.plan_item``: its record and what writes it) and then written, or, ``atomic``, all are planned and
none is written unless all succeed. This module does not print; the CLI renders progress and writes the
records.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from fastapply.engine import ModelRun
from fastapply.errors import FastapplyError, UsageError
from fastapply.items import BatchItem
from fastapply.plan import ModelRunner, Planned, Write, failed_record, is_link, location, plan_item
from fastapply.validate import RefusalWatch


def apply_item(item: BatchItem, run_model: ModelRunner | None, in_place: bool, engine: str = "auto",
               force: bool = False, merge_first: bool = False, focus: bool = True) -> dict:
    """Apply one item with ``engine`` (``run_model`` None: no model; ``merge_first``: a certain merge
    before the model, see ``engine.resolve_edit``); the record describing the outcome (never raises a
    fastapply error)."""
    record, write = plan_item(item, run_model, engine, force, merge_first, focus)
    return _done(record, write, in_place)


def _done(record: dict, write: Write | None, in_place: bool) -> dict:
    """The record of an item planned (``plan_item``), its file written where ``in_place`` (and its text
    then left out of the record)."""
    if in_place and write is not None:
        try:
            write()
        except FastapplyError as exc:
            return failed_record(record["line"], record["file"], exc)
    if not in_place or not record["ok"]:
        return record
    return {**{key: value for key, value in record.items() if key != "text"}, "written": write is not None}


def run_batch(items: list[BatchItem], run_model: ModelRunner | None, in_place: bool = False, workers: int = 1,
              engine: str = "auto", force: bool = False, merge_first: bool = False, focus: bool = True,
              atomic: bool = False) -> Iterator[dict]:
    """The record of every item, in input order; ``workers`` > 1 sends items concurrently (a server).
    ``atomic``: every item is planned before any is written, and none is written unless all succeed. The
    parts of one commit (of a series of ``git format-patch`` mails) apply to the files as the commits
    before it leave them: a copy is planned before any part of its commit is written."""
    commits = [list(group) for _, group in itertools.groupby(items, lambda item: item.part and item.part.commit)]

    def paths(group: list[BatchItem]) -> list[str]:  # what the items write (a copy's original is read alone)
        return [location(path, is_link(item, Planned())) for item in group if not item.problem
                for path in ({item.file} if item.action == "copy" else {item.file, item.source})]

    if in_place and atomic and any(len(set(paths(group))) < len(paths(group)) for group in commits):
        raise UsageError("with --in-place and --atomic, each file may appear only once in a commit (each of its "
                         "edits would be made to the file as it was)")
    if in_place and workers > 1 and len(set(paths(items))) < len(paths(items)):
        raise UsageError("with --in-place and --workers, each file may appear only once (edits to one file "
                         "would race); run them with --workers 1")
    if not atomic:
        for group in commits:
            copies = {id(item): plan_item(item, run_model, engine, force, merge_first, focus) for item in group
                      if item.action == "copy"}
            yield from _each(lambda item: _done(*copies[id(item)], in_place) if id(item) in copies else apply_item(
                item, run_model, in_place, engine, force, merge_first, focus), group, workers)
        return
    files, planned = Planned(), []
    for group in commits:
        planned += _each(lambda item: plan_item(item, run_model, engine, force, merge_first, focus, files), group,
                         workers)
        files.next_commit()
    whole = all(record["ok"] for record, _ in planned)
    if in_place and whole:
        planned = _still_as_read(planned)
        whole = all(record["ok"] for record, _ in planned)
    yield from (_done(record, write, in_place and whole) for record, write in planned)


def _still_as_read(planned: list[tuple[dict, Write | None]]) -> list[tuple[dict, Write | None]]:
    """``--atomic``'s plan with the record of each item whose file another program wrote since it was read
    failed (the first item of the plan to touch a file read it from the disk), before any is written."""
    first: dict[str, tuple[Callable[[], None] | None, int]] = {}
    for k, (_, write) in enumerate(planned):
        for where, check in (write.checks() if write is not None else ()):
            first.setdefault(where, (check, k))
    out = list(planned)
    for check, k in first.values():
        try:
            if check is not None:
                check()
        except FastapplyError as exc:
            out[k] = (failed_record(out[k][0]["line"], out[k][0]["file"], exc), None)
    return out


def summary(records: list[dict], in_place: bool) -> str:
    """One line on what a batch did to the files (would do, without ``in_place``), from its records.

    >>> summary([{"ok": True, "changed": True, "written": True, "created": True}, {"ok": True, "changed": True,
    ...          "written": True}, {"ok": True, "changed": False, "written": False}, {"ok": False}], in_place=True)
    '2 files changed (1 edited, 1 created), 1 unchanged, 1 failed'
    """
    done = [r for r in records if r["ok"] and (r["written"] if in_place else r["changed"])]
    did = Counter("created" if "created" in r else "deleted" if "deleted" in r else "moved" if "moved_from" in r
                  else "copied" if "copied_from" in r else "edited" for r in done)
    kinds = ", ".join(f"{did[kind]} {kind}" for kind in ("edited", "created", "deleted", "moved", "copied")
                      if did[kind])
    changed = sum(did.values())
    line = f"{changed} file{'s' * (changed != 1)} {'changed' if in_place else 'would change'}" + (
        f" ({kinds})" if kinds else "")
    unchanged = sum(r["ok"] and not r["changed"] for r in records)
    failed = sum(not r["ok"] for r in records)
    return line + (f", {unchanged} unchanged" if unchanged else "") + (f", {failed} failed" if failed else "")


def _each(do: Callable[[BatchItem], object], items: list[BatchItem], workers: int) -> Iterator:
    """``do`` of each item, in order; with ``workers`` > 1 from that many threads."""
    if workers <= 1:
        yield from map(do, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(do, items)


def local_runner(model: str, device: str = "auto", dtype: str = "auto", adapter: str | None = None,
                 preset: str = "default", policy: str = "fastapply", max_new_tokens: int | None = None,
                 temperature: float = 0.0, seed: int | None = None, draft_model: str | None = None,
                 medusa: str | None = None, on_pass=None, lazy: bool = False) -> ModelRunner:
    """A model runner over one model (and its draft model or Medusa heads) loaded now, or, ``lazy``, by
    the first edit that needs it (a batch of certain merges loads none; a failure to load is each such
    edit's error), and reused for every item; ``on_pass(output, stats)`` is called after each forward
    pass."""
    from fastapply.apply import apply_edit, load_model_drafters
    from fastapply.loading import load_model

    loaded: list = []  # (model, tokenizer, drafters), or the error loading them raised

    def load() -> tuple:
        if not loaded:
            try:
                lm, tokenizer = load_model(model, device, dtype, adapter)
                loaded.append((lm, tokenizer, load_model_drafters(lm, tokenizer, draft_model, medusa)))
            except FastapplyError as exc:
                loaded.append(exc)
        if isinstance(loaded[0], FastapplyError):
            raise loaded[0]
        return loaded[0]

    if not lazy:
        load()

    def run_model(original: str, update: str, instruction: str, merged: str | None,
                  watch: RefusalWatch | None = None, language: str | None = None) -> ModelRun:
        lm, tokenizer, models = load()
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
