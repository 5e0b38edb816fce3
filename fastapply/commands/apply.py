"""``fastapply apply FILE --edit TEXT`` (the default command): one edit, printed, written or diffed.

The edit goes through ``engine.resolve_edit`` (the merge engine, a local model or a server, with
validation); this module reads the inputs, shows progress and stats on stderr and renders the result.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from fastapply.cli import (AdapterOpt, ApiKeyOpt, ApplyEngine, ApplyEngineOpt, BackendOpt, BaseUrlOpt, DeviceOpt,
                           DraftModelOpt, DraftOpt, DtypeOpt, FocusOpt, ForceOpt, MaxTokensOpt, MedusaOpt, ModelOpt,
                           PredictionOpt, PresetOpt, ServerOpt, VerboseOpt, app, draft_policy, errors, local_model,
                           ready_model, setup_logging, stderr)
from fastapply.errors import UsageError


@app.command("apply")
def apply_command(
    file: Annotated[str, typer.Argument(help="The file to edit; - reads it from stdin.")],
    edit: Annotated[Optional[str], typer.Option("--edit", "-e", help="The update snippet, diff or instruction; - reads stdin.")] = None,
    edit_file: Annotated[Optional[Path], typer.Option("--edit-file", help="Read the edit from this file.")] = None,
    instruction: Annotated[str, typer.Option(help="A natural-language instruction, beside the snippet or alone.")] = "",
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
    language: Annotated[Optional[str], typer.Option(
        help="The file's language (default: from its extension; on stdin, told by its text where it can be).")] = None,
    max_new_tokens: MaxTokensOpt = None,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 is greedy; above 0 samples (losslessly).")] = 0.0,
    seed: Annotated[Optional[int], typer.Option(help="Seed for sampling.")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", "-i", help="Replace FILE atomically.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the result to this path.")] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff instead of the file.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 0 if the edit leaves the file unchanged, 1 if it would change it.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result and stats as JSON.")] = False,
    stats: Annotated[bool, typer.Option("--stats", help="Show decoding stats on stderr.")] = False,
    backend: BackendOpt = "local",
    base_url: BaseUrlOpt = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
    prediction: PredictionOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """Apply an edit to FILE and print the new file (or write it with --in-place / -o)."""
    setup_logging(verbose)
    with errors():
        from fastapply import fileio
        from fastapply.client import apply_remote, remote_base_url

        if sum([in_place, output is not None, diff, check, as_json]) > 1:
            raise UsageError("choose one of --in-place, --output, --diff, --check and --json")
        if in_place and file == fileio.STDIN:
            raise UsageError("--in-place needs a file, not stdin")
        from fastapply.engine import EditRefused, ModelRun, resolve_edit
        from fastapply.syntax import file_language, get_language

        from fastapply import bundled

        remote = remote_base_url(backend, base_url, server)
        if remote is None:
            model = local_model(model)
        policy = draft_policy(draft, draft_model, medusa, remote)
        update, raw_edit = _read_edit(edit, edit_file, file, instruction)
        creating = _creates(file, update)
        read = b"" if creating else fileio.read_bytes(file)  # FILE must still hold it when written (-i)
        original, fmt = ("", None) if creating else fileio.decode(read, fileio.shown_name(file))
        if language is not None:
            get_language(language)
        else:
            language = file_language(None if file == fileio.STDIN else file, original)

        def run_model(shown: str, update: str, instruction: str, merged: str | None, watch) -> ModelRun:
            if remote is not None:  # the server writes its answer whole: no watch
                return ModelRun(*apply_remote(remote, api_key, model, shown, update, instruction, preset,
                                              prediction, max_new_tokens, merged, language))
            return _run_model(shown, update, instruction, model, adapter, device, dtype, policy, draft_model,
                              medusa, preset, max_new_tokens, temperature, seed, merged, watch, language)

        try:
            outcome = resolve_edit(original, update, language, engine.value,
                                   run_model if model or remote is not None else None, force, instruction,
                                   merge_first=remote is None and model == bundled.NAME, focus=focus,
                                   path=None if file == fileio.STDIN else file)
        except EditRefused as refused:
            if file == fileio.STDIN and language is None and refused.reasons == ("uncertain-merge",):
                refused = EditRefused(f"{refused} (the language of a file on stdin was not told by its text: name it "
                                      f"with --language)", refused.reasons, refused.merge)
            if as_json:  # a tool reading stdout learns of the refusal there too; the one line and exit 3 stay
                typer.echo(json.dumps(_report(file, None, refused, model, remote, policy, language), indent=1))
            raise refused from None
        new_text = outcome.text
        for problem in outcome.problems:
            stderr.print(f"fastapply: warning: {problem.message} (written because of --force)", markup=False)
        if stats:
            if outcome.model_run is not None:
                _print_stats(outcome.model_run.stats)
            else:
                stderr.print("merged without a model (the merge engine is certain)")
        changed = new_text != original
        fmt = (_created_ends(raw_edit, file) if creating else None) or outcome.format(fmt)
        if check:
            raise typer.Exit(1 if changed else 0)
        if as_json:
            typer.echo(json.dumps(_report(file, original, outcome, model, remote, policy, language), indent=1))
        elif diff:
            name = fileio.shown_name(file)
            sys.stdout.write("".join(difflib.unified_diff(
                original.splitlines(keepends=True), new_text.splitlines(keepends=True), f"a/{name}", f"b/{name}")))
        elif in_place or output is not None:
            if in_place and creating:
                os.makedirs(os.path.dirname(os.path.abspath(file)), exist_ok=True)
            fileio.write_atomic(file if in_place else output, fileio.encode(new_text, fmt), read if in_place else None)
            if stderr.is_terminal:
                stderr.print(f"wrote {file if in_place else output}")
        else:
            sys.stdout.buffer.write(fileio.encode(new_text, fmt))
            sys.stdout.flush()


def _report(file: str, original: str | None, outcome, model: str | None, remote: str | None, policy: str,
            language: str | None) -> dict:
    """What ``--json`` prints for an ``EditOutcome``, or for an ``EditRefused`` (``ok`` false, no text;
    ``refused`` says why, ``problems`` names what validation found in the model's answer); ``language``:
    the one the edit was merged and checked in (named, by the file's extension, or told by its text)."""
    refused = original is None
    merged, run = outcome.merge, outcome.model_run
    return {
        "path": file, "ok": not refused, "changed": None if refused else outcome.text != original, "language": language,
        "text": None if refused else outcome.text, "engine": None if refused else outcome.engine, "model": model,
        "server": remote, "draft": ("server" if remote else policy) if run is not None else None,
        "merge": {"confidence": merged.confidence, "reasons": list(merged.reasons)} if merged else None,
        "problems": [p.name for p in outcome.problems],
        "refused": {"message": str(outcome), "reasons": list(outcome.reasons)} if refused else None,
        "stats": run.stats if run is not None else None,
    }


def _creates(file: str, update: str) -> bool:
    """Whether FILE is not there and the edit is a diff that creates it (``--- /dev/null``, ``*** Add File:``),
    or tool calls that do (``Write``, ``create``, an ``Edit`` of an empty old string)."""
    from fastapply import fileio
    from fastapply.diffs import read_patch
    from fastapply.toolcall import creates

    if file == fileio.STDIN or os.path.lexists(file):
        return False
    patch = read_patch(update)
    return (patch is not None and patch.creates) or creates(update, file)


def _created_ends(raw: str, file: str):
    """The line ends (other than LF) of the file that the diff ``raw`` (the edit as given, its line ends
    as they are) creates at ``file``: those its lines have in the diff, as ``batch --patch`` writes them
    (``fileparts.FilePart.ends``); None for LF."""
    from fastapply.fileparts import part_of

    part = part_of(raw, file)
    return part.ends if part is not None and part.action == "create" else None


def _read_edit(edit: str | None, edit_file: Path | None, file: str, instruction: str = "") -> tuple[str, str]:
    """The update snippet as given (of a diff of several files, FILE's part); "" where there is none and
    ``instruction`` is the whole edit. And the edit with its line ends as they are, for the file a diff
    creates (``_created_ends``)."""
    from fastapply import fileio
    from fastapply.binpatch import is_binary_patch
    from fastapply.fileparts import part_for

    if edit is not None and edit_file is not None:
        raise UsageError("pass the edit once: --edit or --edit-file")
    if edit == fileio.STDIN:
        if file == fileio.STDIN:
            raise UsageError("the file and the edit cannot both come from stdin")
        raw = fileio.read_verbatim(fileio.STDIN)
    else:
        raw = fileio.read_verbatim(str(edit_file)) if edit_file is not None else edit or ""
    text = fileio.as_lf(raw)  # line ends as a file's are read
    if not text.strip() and not instruction.strip():
        raise UsageError("the edit is empty: pass --edit TEXT, --edit-file PATH or --edit - (stdin), "
                         "or an --instruction")
    text = part_for(text, file)  # a diff of several files: this file's part of it
    if is_binary_patch(text):
        raise UsageError(f"the edit is git's binary patch of {file}: fastapply FILE edits text; apply it with "
                         f"fastapply batch --patch")
    return text, raw


def _run_model(original, update, instruction, model, adapter, device, dtype, policy, draft_model, medusa, preset,
               max_new_tokens, temperature, seed, merged, watch, language):
    from fastapply.batch import local_runner

    model = ready_model(model)
    with _progress() as on_pass:
        run = local_runner(model, device, dtype, adapter, preset, policy, max_new_tokens, temperature, seed,
                           draft_model and ready_model(draft_model), medusa, on_pass)
        return run(original, update, instruction, merged, watch, language)


class _progress:
    """A live status line on stderr while the model writes, only when stderr is a terminal."""

    def __enter__(self):
        self.status = stderr.status("loading model...") if stderr.is_terminal else None
        if self.status is not None:
            self.status.start()
        return self.update if self.status is not None else None

    def update(self, out, stats) -> None:
        self.status.update(f"{stats.tokens} tokens, {stats.tokens_per_s:.0f} tok/s, "
                           f"{stats.tokens_per_pass:.1f} tokens per pass")

    def __exit__(self, *exc) -> None:
        if self.status is not None:
            self.status.stop()


def _print_stats(d: dict) -> None:
    """Decoding stats (``DecodeStats.as_dict()``, or a remote answer's stats) as a table on stderr."""
    from rich.table import Table

    table = Table(title="decoding", show_header=False)
    for key in ("passes", "tokens", "tokens_per_pass", "acceptance", "prefill_s", "decode_s", "seconds",
                "prompt_tokens", "completion_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens",
                "tokens_per_s", "chars_per_s"):
        if d.get(key) is not None:
            table.add_row(key.replace("_", " "), str(d[key]))
    if "accepted_by_source" in d:
        table.add_row("accepted by source", ", ".join(f"{k} {v}" for k, v in d["accepted_by_source"].items()) or "-")
    stderr.print(table)


