"""``fastapply batch EDITS.jsonl``: many edits with one model load or one server, one record per edit."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Optional

import typer

from fastapply.cli import (AdapterOpt, ApiKeyOpt, ApplyEngine, ApplyEngineOpt, BackendOpt, BaseUrlOpt, DeviceOpt,
                           DraftModelOpt, DraftOpt, DtypeOpt, FocusOpt, ForceOpt, MaxTokensOpt, MedusaOpt, ModelOpt,
                           PredictionOpt, PresetOpt, ServerOpt, app, draft_policy, errors, local_model, stderr,
                           task_progress)
from fastapply.errors import UsageError


@app.command("batch")
def batch_command(
    edits: Annotated[str, typer.Argument(help='JSONL of {"file": ..., "edit": ..., "instruction"?: ...}; - reads stdin.')],
    patch: Annotated[bool, typer.Option("--patch", help="EDITS is a diff of one or more files (git diff, "
                                                        "format-patch, show or log -p, diff -ruN or -rcN, svn or "
                                                        "hg diff, *** Begin Patch): each file's part is its edit, "
                                                        "or creates, deletes, moves or copies the file (or "
                                                        "link).")] = False,
    strip: Annotated[Optional[int], typer.Option("-p", "--strip", min=0, help="With --patch, take this many leading "
                                                 "folders off the diff's paths, as git apply -p and patch -p do "
                                                 "(default: each side's own folder, git's a/ and b/ or diff -ru "
                                                 "old new's).")] = None,
    reverse: Annotated[bool, typer.Option("-R", "--reverse", help="With --patch, undo the diff (as git apply -R): "
                                                                  "apply it turned around.")] = False,
    answer: Annotated[bool, typer.Option("--answer", help="EDITS is a chat model's answer whose code blocks name "
                                                          "their files (```python:src/calc.py, or the path on the "
                                                          "line above): each file's blocks are its edit.")] = False,
    calls: Annotated[bool, typer.Option("--calls", help="EDITS is a coding agent's edit tool calls as JSON (Edit, "
                                                        "MultiEdit, Write; str_replace, insert, create), each naming "
                                                        "its file: each file's calls, in order, are its edit.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the result records here (default: stdout).")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", "-i", help="Replace each changed file atomically (and create, delete "
                                                                   "or move the files the diff or answer does).")] = False,
    atomic: Annotated[bool, typer.Option("--atomic", help="With --in-place, write nothing unless every edit "
                                                          "succeeds (all are decided first).")] = False,
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    draft: DraftOpt = None,
    draft_model: DraftModelOpt = None,
    medusa: MedusaOpt = None,
    preset: PresetOpt = "default",
    engine: ApplyEngineOpt = ApplyEngine.auto,
    force: ForceOpt = False,
    focus: FocusOpt = True,
    max_new_tokens: MaxTokensOpt = None,
    backend: BackendOpt = "local",
    base_url: BaseUrlOpt = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
    prediction: PredictionOpt = True,
    workers: Annotated[int, typer.Option(min=1, help="Edits sent to the server at once (a server backend only).")] = 1,
) -> None:
    """Apply many edits with one model load (or one server, or the merge engine alone); one JSON record per
    edit, in order. Each edit is decided and validated as `fastapply FILE --edit` does it. With --patch,
    EDITS is a diff of several files, each file's part one edit; with --answer, a chat model's answer, each
    file's code blocks one edit; with --calls, a coding agent's edit tool calls, each file's calls one edit."""
    with errors():
        from fastapply import fileio
        from fastapply.batch import local_runner, remote_runner, run_batch, summary
        from fastapply.items import answer_items, call_items, patch_items, read_items
        from fastapply.client import RemoteBackend, remote_base_url

        from fastapply import bundled

        if patch + answer + calls > 1:
            raise UsageError("choose one of --patch, --answer and --calls")
        if (strip is not None or reverse) and not patch:
            raise UsageError(f"{'-R (--reverse)' if reverse else '-p (--strip)'} reads a diff: it needs --patch")
        remote = remote_base_url(backend, base_url, server)
        if remote is None:
            model = local_model(model)
        policy = draft_policy(draft, draft_model, medusa, remote)
        uses_model = engine != ApplyEngine.merge and (remote is not None or bool(model))
        if engine == ApplyEngine.model and not uses_model:
            raise UsageError("no model for --engine model: pass --model PATH_OR_HUB_ID, set FASTAPPLY_MODEL or "
                             "pass --server URL")
        if uses_model and remote is None and workers > 1:
            raise UsageError("--workers needs a server backend (--server or --backend openai); one local model "
                             "runs one edit at a time")
        text = fileio.read_verbatim(edits) if patch else fileio.read_text(edits)[0]  # a diff's CRs are its lines'
        if reverse:
            from fastapply.reverse import reversed_diff

            text = reversed_diff(text)
        items = (patch_items(text, strip) if patch else answer_items(text) if answer else call_items(text) if calls
                 else read_items(text))
        failed, written, records = 0, False, []
        merge_first = remote is None and model == bundled.NAME  # certain merges need no model: loaded when one does
        with ExitStack() as stack:
            run_model = None  # no model: certain merges only
            if uses_model and remote is not None:
                run_model = remote_runner(stack.enter_context(
                    RemoteBackend(remote, api_key, model, preset, prediction, max_new_tokens)))
            elif uses_model:
                run_model = local_runner(model, device, dtype, adapter, preset, policy, max_new_tokens,
                                         draft_model=draft_model, medusa=medusa, lazy=merge_first)
            sink = stack.enter_context(open(out, "w", encoding="utf-8")) if out is not None else sys.stdout
            on_task = stack.enter_context(task_progress(len(items), "batch"))
            for done, record in enumerate(run_batch(items, run_model, in_place, workers, engine.value, force,
                                                    merge_first, focus, atomic), 1):
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                records.append(record)
                written = written or record.get("written", False)
                if not record["ok"]:
                    failed += 1
                    stderr.print(f"fastapply: {record['file'] or 'line ' + str(record['line'])}: {record['error']}",
                                 markup=False, soft_wrap=True)
                if on_task is not None:
                    on_task(done, len(items))
        if stderr.is_terminal:  # a person at a terminal reads one line; tools read the records
            stderr.print(f"fastapply: {summary(records, in_place)}", markup=False, soft_wrap=True)
        if failed:
            nothing = "; nothing was written (--atomic)" if atomic and in_place and not written else ""
            stderr.print(f"fastapply: {failed} of {len(items)} edits failed (see the records with \"ok\": false)"
                         f"{nothing}", markup=False, soft_wrap=True)
            raise typer.Exit(1)

