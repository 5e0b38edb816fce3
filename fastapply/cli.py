"""The ``fastapply`` command: parse, call the library, render. Thin by design.

``fastapply FILE --edit TEXT`` applies an edit (the ``apply`` command is the default); ``fastapply
bench`` compares decoding methods. stdout carries only the result; messages go to stderr, with colour
and progress only when stderr is a terminal. Exit codes: 0 success, 1 error, 2 usage, 3 refused.
"""

from __future__ import annotations

import difflib
import json
import logging
import sys
from contextlib import ExitStack
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from typer.core import TyperGroup

from fastapply import __version__
from fastapply.errors import FastapplyError, RefusedError, UsageError

stderr = Console(stderr=True, highlight=False)


class _ApplyByDefault(TyperGroup):
    """``fastapply FILE ...`` means ``fastapply apply FILE ...``; subcommands and ``--help`` keep their names."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["apply", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_ApplyByDefault, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Apply code edits with a language model, made fast by speculative edits.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"fastapply {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Show the version and exit.")] = False) -> None:
    pass


class ApplyEngine(str, Enum):
    auto = "auto"
    merge = "merge"
    model = "model"


class Policy(str, Enum):
    fastapply = "fastapply"
    none = "none"
    pld = "pld"
    ngram = "ngram"


ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", envvar="FASTAPPLY_MODEL",
                                                 help="Checkpoint directory or hub id.")]
DeviceOpt = Annotated[str, typer.Option(envvar="FASTAPPLY_DEVICE", help="auto, cpu, cuda or mps.")]
DtypeOpt = Annotated[str, typer.Option(envvar="FASTAPPLY_DTYPE", help="auto (float32 on CPU, bfloat16 on GPU), "
                                                                     "float32, bfloat16 or float16.")]
PresetOpt = Annotated[str, typer.Option(envvar="FASTAPPLY_PRESET", help="Prompt preset: default or open-fastapply.")]
MaxTokensOpt = Annotated[Optional[int], typer.Option(
    "--max-new-tokens", min=1, help="Most tokens the model may write (default: twice the file and the edit, plus 256).")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens to stderr.")]
BackendOpt = Annotated[str, typer.Option(envvar="FASTAPPLY_BACKEND", help="local (load --model here) or openai "
                                                                          "(an OpenAI-compatible server at --base-url).")]
BaseUrlOpt = Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_BASE_URL", help="The server's API base, e.g. "
                                                   "http://127.0.0.1:8000/v1; --model then names its model.")]
ServerOpt = Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_SERVER", help="A `fastapply serve` URL, e.g. "
                                                  "http://127.0.0.1:8000: short for --backend openai --base-url URL/v1.")]
ApiKeyOpt = Annotated[Optional[str], typer.Option(envvar=["FASTAPPLY_API_KEY", "OPENAI_API_KEY"],
                                                  help="Bearer token for the server.")]
PredictionOpt = Annotated[bool, typer.Option("--prediction/--no-prediction", help="Send the original file as the "
                                             "request's `prediction` (off for servers that reject it).")]


@app.command("apply")
def apply_command(
    file: Annotated[str, typer.Argument(help="The file to edit; - reads it from stdin.")],
    edit: Annotated[Optional[str], typer.Option("--edit", "-e", help="The update snippet or instruction; - reads stdin.")] = None,
    edit_file: Annotated[Optional[Path], typer.Option("--edit-file", help="Read the edit from this file.")] = None,
    instruction: Annotated[str, typer.Option(help="A natural-language instruction beside the snippet.")] = "",
    model: ModelOpt = None,
    adapter: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_ADAPTER", help="LoRA adapter directory on top of --model.")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    draft: Annotated[Policy, typer.Option(envvar="FASTAPPLY_DRAFT", help="Draft policy.")] = Policy.fastapply,
    preset: PresetOpt = "default",
    engine: Annotated[ApplyEngine, typer.Option(envvar="FASTAPPLY_ENGINE", help="merge: the merge engine only (no model); "
                                           "model: the model only; auto: a certain merge without a model, the model "
                                           "drafting from the merge with one.")] = ApplyEngine.auto,
    force: Annotated[bool, typer.Option("--force", help="Write model output even when it fails validation.")] = False,
    language: Annotated[Optional[str], typer.Option(help="The file's language (default: from its extension).")] = None,
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
    _setup_logging(verbose)
    with _errors():
        from fastapply import fileio
        from fastapply.client import apply_remote, remote_base_url

        if sum([in_place, output is not None, diff, check, as_json]) > 1:
            raise UsageError("choose one of --in-place, --output, --diff, --check and --json")
        if in_place and file == fileio.STDIN:
            raise UsageError("--in-place needs a file, not stdin")
        from fastapply.engine import ModelRun, resolve_edit
        from fastapply.syntax import get_language, language_for_path

        remote = remote_base_url(backend, base_url, server)
        update = _read_edit(edit, edit_file, file)
        original, fmt = fileio.read_text(file)
        if language is not None:
            get_language(language)
        else:
            language = language_for_path(file) if file != fileio.STDIN else None

        def run_model(merged: str | None) -> ModelRun:
            if remote is not None:
                return ModelRun(*apply_remote(remote, api_key, model, original, update, instruction, preset,
                                              prediction, max_new_tokens))
            result = _run_model(original, update, instruction, model, adapter, device, dtype, draft.value, preset,
                                max_new_tokens, temperature, seed, merged)
            return ModelRun(result.text, result.closed, result.stats.as_dict())

        outcome = resolve_edit(original, update, language, engine.value,
                               run_model if model or remote is not None else None, force, instruction)
        new_text = outcome.text
        for problem in outcome.problems:
            stderr.print(f"fastapply: warning: {problem.message} (written because of --force)", markup=False)
        if stats:
            if outcome.model_run is not None:
                _print_stats(outcome.model_run.stats)
            else:
                stderr.print("merged without a model (the merge engine is certain)")
        changed = new_text != original
        if check:
            raise typer.Exit(1 if changed else 0)
        if as_json:
            merged = outcome.merge
            ran_model = outcome.model_run is not None
            typer.echo(json.dumps({
                "path": file, "changed": changed, "text": new_text, "engine": outcome.engine, "model": model,
                "server": remote, "draft": ("server" if remote else draft.value) if ran_model else None,
                "merge": {"confidence": merged.confidence, "reasons": list(merged.reasons)} if merged else None,
                "problems": [p.name for p in outcome.problems],
                "stats": outcome.model_run.stats if ran_model else None,
            }, indent=1))
        elif diff:
            name = "stdin" if file == fileio.STDIN else file
            sys.stdout.write("".join(difflib.unified_diff(
                original.splitlines(keepends=True), new_text.splitlines(keepends=True), f"a/{name}", f"b/{name}")))
        elif in_place or output is not None:
            fileio.write_atomic(file if in_place else output, fileio.encode(new_text, fmt))
            if stderr.is_terminal:
                stderr.print(f"wrote {file if in_place else output}")
        else:
            sys.stdout.buffer.write(fileio.encode(new_text, fmt))
            sys.stdout.flush()


def _read_edit(edit: str | None, edit_file: Path | None, file: str) -> str:
    from fastapply import fileio

    if edit is not None and edit_file is not None:
        raise UsageError("pass the edit once: --edit or --edit-file")
    if edit == fileio.STDIN:
        if file == fileio.STDIN:
            raise UsageError("the file and the edit cannot both come from stdin")
        text = fileio.decode(fileio.read_bytes(fileio.STDIN), "stdin")[0]
    elif edit_file is not None:
        text = fileio.read_text(str(edit_file))[0]
    else:
        text = edit or ""
    if not text.strip():
        raise UsageError("the edit is empty: pass --edit TEXT, --edit-file PATH or --edit - (stdin)")
    return text


def _run_model(original, update, instruction, model, adapter, device, dtype, policy, preset, max_new_tokens,
               temperature, seed, merged=None):
    from fastapply.apply import apply_edit
    from fastapply.target import load_model

    with _progress() as on_pass:
        lm, tokenizer = load_model(model, device, dtype, adapter)
        return apply_edit(lm, tokenizer, original, update, instruction, preset=preset, policy=policy,
                          merged=merged, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                          on_pass=on_pass)


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


class _errors:
    """Turn fastapply's errors into one line on stderr and their exit status; Ctrl-C into status 130."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, FastapplyError):
            stderr.print(f"fastapply: {'refused' if isinstance(exc, RefusedError) else 'error'}: {exc}",
                         markup=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code)
        if isinstance(exc, KeyboardInterrupt):
            stderr.print("fastapply: interrupted; nothing was written", markup=False)
            raise typer.Exit(130)
        return False


def _setup_logging(verbose: bool) -> None:
    if verbose:
        from rich.logging import RichHandler

        logging.basicConfig(level=logging.INFO, handlers=[RichHandler(console=stderr)], format="%(message)s")


@app.command("bench")
def bench_command(
    model: ModelOpt = None,
    file: Annotated[Optional[Path], typer.Option("--file", help="The file of a single case.")] = None,
    edit_file: Annotated[Optional[Path], typer.Option("--edit-file", help="The edit of a single case.")] = None,
    expected: Annotated[Optional[Path], typer.Option("--expected", help="The reference result of a single case.")] = None,
    tasks: Annotated[Optional[Path], typer.Option("--tasks", help="Cases from a JSONL file in the eval-task schema.")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Use at most this many tasks.")] = None,
    acceptance: Annotated[str, typer.Option(help="model: the model's own choices; replay: real forward passes, "
                                                 "choices from the expected file.")] = "model",
    methods: Annotated[str, typer.Option(help="Comma-separated: plain, prompt-lookup, ngram, fastapply.")] =
    "plain,prompt-lookup,ngram,fastapply",
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    preset: PresetOpt = "default",
    max_new_tokens: MaxTokensOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the rows as JSON here.")] = None,
) -> None:
    """Compare plain decoding, prompt lookup, n-gram and speculative edits on one model in one run."""
    with _errors():
        from fastapply.bench import BenchCase, run_bench
        from fastapply.target import load_model

        if not model:
            raise UsageError("no model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        cases = _bench_cases(file, edit_file, expected, tasks, limit)
        lm, tokenizer = load_model(model, device, dtype)
        rows = run_bench(lm, tokenizer, cases, acceptance, preset, max_new_tokens,
                         tuple(m.strip() for m in methods.split(",") if m.strip()))
        _print_bench(rows, model, acceptance)
        if out is not None:
            import platform

            import torch

            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps({
                "model": model, "acceptance": acceptance, "device": str(lm.device), "dtype": str(lm.dtype),
                "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, {platform.processor() or platform.system()}",
                "parameters": sum(p.numel() for p in lm.parameters()),
                "rows": [row.as_dict() for row in rows]}, indent=1))


def _bench_cases(file, edit_file, expected, tasks, limit):
    from fastapply import fileio
    from fastapply.bench import BenchCase

    if tasks is not None:
        cases = []
        with open(tasks, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    t = json.loads(line)
                    cases.append(BenchCase(t["id"], t["original"], t["update"], t.get("instruction", ""),
                                           t.get("expected")))
        return cases[:limit] if limit else cases
    if file is None or edit_file is None:
        raise UsageError("give a case with --file and --edit-file (and --expected), or --tasks FILE.jsonl")
    return [BenchCase(file.name, fileio.read_text(str(file))[0], fileio.read_text(str(edit_file))[0], "",
                      fileio.read_text(str(expected))[0] if expected else None)]


def _print_bench(rows, model: str, acceptance: str) -> None:
    from rich.table import Table

    table = Table(title=f"fastapply bench: {model} (acceptance: {acceptance})")
    for col in ("case", "method", "passes", "tokens/pass", "tok/s", "chars/s", "seconds", "vs plain",
                "vs prompt lookup", "same as plain"):
        table.add_column(col, justify="left" if col in ("case", "method") else "right")
    for r in rows:
        table.add_row(r.case, r.method, str(r.passes), f"{r.tokens_per_pass:.2f}", f"{r.tokens_per_s:.1f}",
                      f"{r.chars_per_s:.0f}", f"{r.seconds:.2f}", f"{r.speedup_plain:.2f}x",
                      f"{r.speedup_prompt_lookup:.2f}x", "yes" if r.same_as_plain else "NO")
    Console(width=160).print(table)


@app.command("serve")
def serve_command(
    model: ModelOpt = None,
    adapter: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_ADAPTER", help="LoRA adapter directory on top of --model.")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    host: Annotated[str, typer.Option(envvar="FASTAPPLY_HOST", help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="FASTAPPLY_PORT", min=0, max=65535, help="Port to listen on.")] = 8000,
    api_key: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_API_KEY", help="Require Authorization: Bearer KEY.")] = None,
    queue_size: Annotated[int, typer.Option(min=0, help="Requests that may wait behind the running one; more get 503.")] = 16,
    max_body_bytes: Annotated[int, typer.Option(min=1024, help="Larger request bodies get 413.")] = 8 * 1024 * 1024,
    served_model_name: Annotated[Optional[str], typer.Option(help="The model id /v1/models reports (default: --model).")] = None,
    threads: Annotated[Optional[int], typer.Option(envvar="FASTAPPLY_THREADS", min=1, help="CPU threads for the model "
                                                   "(default: torch's; 1 is often fastest on a busy machine).")] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Keep one model warm behind an OpenAI-compatible API (chat completions with `prediction`, /v1/apply)."""
    with _errors():
        try:
            from fastapply.server import ServeConfig, serve
        except ImportError as exc:
            raise FastapplyError(f"serve needs the serve extra ({exc.name} is missing): "
                                 "pip install 'fastapply[serve]'") from None
        if not model:
            raise UsageError("no model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
            stderr.print(f"fastapply: warning: serving on {host} without --api-key: anyone who can reach it may use it")
        serve(model, device, dtype, adapter, ServeConfig(host=host, port=port, api_key=api_key, queue_size=queue_size,
                                                         max_body_bytes=max_body_bytes,
                                                         model_name=served_model_name or model),
              log_level="debug" if verbose else "info", threads=threads)


@app.command("batch")
def batch_command(
    edits: Annotated[str, typer.Argument(help='JSONL of {"file": ..., "edit": ..., "instruction"?: ...}; - reads stdin.')],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the result records here (default: stdout).")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", "-i", help="Replace each changed file atomically.")] = False,
    model: ModelOpt = None,
    adapter: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_ADAPTER", help="LoRA adapter directory on top of --model.")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    draft: Annotated[Policy, typer.Option(envvar="FASTAPPLY_DRAFT", help="Draft policy.")] = Policy.fastapply,
    preset: PresetOpt = "default",
    max_new_tokens: MaxTokensOpt = None,
    backend: BackendOpt = "local",
    base_url: BaseUrlOpt = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
    prediction: PredictionOpt = True,
    workers: Annotated[int, typer.Option(min=1, help="Edits sent to the server at once (a server backend only).")] = 1,
) -> None:
    """Apply many edits with one model load (or one server); one JSON record per edit, in order."""
    with _errors():
        from fastapply import fileio
        from fastapply.batch import local_applier, read_items, run_batch
        from fastapply.client import RemoteBackend, remote_base_url

        remote = remote_base_url(backend, base_url, server)
        if remote is None and workers > 1:
            raise UsageError("--workers needs a server backend (--server or --backend openai); one local model "
                             "runs one edit at a time")
        items = read_items(fileio.read_text(edits)[0])
        if remote is None and not model:
            raise UsageError("no model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        failed = 0
        with ExitStack() as stack:
            if remote is not None:
                apply = stack.enter_context(RemoteBackend(remote, api_key, model, preset, prediction, max_new_tokens))
            else:
                apply = local_applier(model, device, dtype, adapter, preset, draft.value, max_new_tokens)
            sink = stack.enter_context(open(out, "w", encoding="utf-8")) if out is not None else sys.stdout
            on_task = stack.enter_context(_task_progress(len(items), "batch"))
            for done, record in enumerate(run_batch(items, apply, in_place, workers), 1):
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                if not record["ok"]:
                    failed += 1
                    stderr.print(f"fastapply: {record['file'] or 'line ' + str(record['line'])}: {record['error']}",
                                 markup=False, soft_wrap=True)
                if on_task is not None:
                    on_task(done, len(items))
        if failed:
            stderr.print(f"fastapply: {failed} of {len(items)} edits failed (see the records with \"ok\": false)",
                         markup=False)
            raise typer.Exit(1)


class Engine(str, Enum):
    merge = "merge"
    model = "model"
    replay = "replay"


@app.command("eval")
def eval_command(
    tasks: Annotated[Optional[Path], typer.Option("--tasks", help="Tasks in the eval schema (.jsonl or .jsonl.gz); "
                                                                  "default: the repository's 450-task suite.")] = None,
    engine: Annotated[Engine, typer.Option(envvar="FASTAPPLY_ENGINE", help="merge: the merge engine; model: "
                                           "a model with each draft policy; replay: the reference answer stands "
                                           "in for the model (draft policies compared, no weights needed).")] = Engine.model,
    model: ModelOpt = None,
    tokenizer: Annotated[Optional[str], typer.Option(help="Tokenizer for --engine replay (default: the model's).")] = None,
    adapter: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_ADAPTER", help="LoRA adapter directory on top of --model.")] = None,
    draft: Annotated[Optional[str], typer.Option(help="Comma-separated policies: fastapply, ngram, pld, none; with "
                                                      "--engine model also plain and prompt-lookup (model.generate). "
                                                      "Default: all of them.")] = None,
    merge_draft: Annotated[bool, typer.Option(help="Let the fastapply policy draft the merge engine's candidate.")] = True,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Run the first N tasks only.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Parallel processes (merge and replay engines).")] = 1,
    out: Annotated[Optional[Path], typer.Option("--out", help="Results directory (default: runs/eval-ENGINE); "
                                                             "a re-run resumes it.")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    preset: PresetOpt = "default",
    max_new_tokens: Annotated[Optional[int], typer.Option(
        "--max-new-tokens", min=1, help="Most tokens per answer (default: twice the file and the edit plus 256, or the "
                                        "reference answer plus 256 when that is longer).")] = None,
    judge_url: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_JUDGE_URL", help="OpenAI-compatible endpoint "
                                                     "of an LLM judge (e.g. http://host/v1); none: no judge score.")] = None,
    judge_model: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_JUDGE_MODEL", help="The judge's model name.")] = None,
    judge_key: Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_JUDGE_KEY", help="The judge's API key.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of the table.")] = False,
) -> None:
    """Run the eval suite: accuracy and speed of an engine and draft policies, with a report and plots."""
    with _errors():
        from fastapply.evaluate import EvalConfig, default_tasks_path, run_eval, run_meta
        from fastapply.judge import JudgeConfig
        from fastapply.report import summarize, table, write_report
        from fastapply.tasks import load_tasks

        if (judge_url is None) != (judge_model is None):
            raise UsageError("an LLM judge needs both --judge-url and --judge-model")
        config = EvalConfig(
            engine=engine.value, policies=tuple(p.strip() for p in (draft or "").split(",") if p.strip()),
            model=model, tokenizer=tokenizer, adapter=adapter, device=device, dtype=dtype, preset=preset,
            max_new_tokens=max_new_tokens, merge_draft=merge_draft,
            judge=JudgeConfig(judge_url, judge_model, judge_key) if judge_url else None,
        ).resolved()
        tasks = tasks or default_tasks_path()
        task_list = load_tasks(tasks)[:limit]
        if not task_list:
            raise UsageError(f"no tasks in {tasks}")
        out = out or Path("runs") / f"eval-{engine.value}"
        with _task_progress(len(task_list)) as on_task:
            run = run_eval(task_list, config, out, workers, on_task)
        summary = summarize(run.records, run_meta(config, run, tasks, limit, out))
        write_report(out, summary)
        if as_json:
            typer.echo(json.dumps({k: v for k, v in summary.items() if k != "per_task"}, indent=1))
        else:
            Console(width=max(Console().width, 140)).print(table(summary))
        if stderr.is_terminal:
            stderr.print(f"{run.ran} results computed, {run.resumed} kept from an earlier run; "
                         f"report in {out}/report.md")


class _task_progress:
    """A progress bar over tasks on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, label: str = "eval"):
        self.total = total
        self.label = label
        self.progress = None

    def __enter__(self):
        if not stderr.is_terminal:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=stderr, transient=True)
        self.progress.start()
        self.bar = self.progress.add_task("tasks", total=self.total)
        return self.update

    def update(self, done: int, total: int) -> None:
        self.progress.update(self.bar, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()


def main() -> None:
    app()
