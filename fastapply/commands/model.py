"""``fastapply model download|info|path``: the default model, fastapply-small, made ready explicitly.

``download`` fetches the base from the package registry into the cache (both hashes checked) and
merges the shipped adapter into it, what the first model run would otherwise do on demand; ``info``
tells what is where; ``path`` prints the cached merged checkpoint's directory (for ``--model`` elsewhere)
and fetches nothing.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from fastapply.cli import VerboseOpt, app, errors, ready_model, setup_logging, stderr

model_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="Fetch, inspect and locate the default model, fastapply-small.")
app.add_typer(model_app, name="model")

BaseOpt = Annotated[bool, typer.Option("--base", help="The base alone (the checked GGUF), not the merged model.")]


@model_app.command("download")
def download(base: BaseOpt = False, verbose: VerboseOpt = False) -> None:
    """Fetch the base into the cache, check it, and merge the adapter: later runs load in seconds."""
    setup_logging(verbose)
    with errors():
        from fastapply import basemodel, bundled

        if base or not bundled.available():
            typer.echo(str(basemodel.gguf_path(progress=stderr.is_terminal)))
        else:
            typer.echo(ready_model(bundled.NAME))


@model_app.command("path")
def path(base: BaseOpt = False, verbose: VerboseOpt = False) -> None:
    """Print where the merged fastapply-small checkpoint (or the base) is in the cache; fetches nothing."""
    setup_logging(verbose)
    with errors():
        from fastapply import basemodel, bundled
        from fastapply.errors import FastapplyError

        found = basemodel.cached_gguf() if base or not bundled.available() else bundled.cached()
        if found is None:
            raise FastapplyError("not in the cache yet: run `fastapply model download`")
        typer.echo(str(found))


@model_app.command("info")
def info(verbose: VerboseOpt = False) -> None:
    """What the default model is, and what of it is in the cache (fetches nothing)."""
    setup_logging(verbose)
    with errors():
        from fastapply import basemodel, bundled

        gguf = basemodel.base_dir() / basemodel.BASE.gguf_name
        merged = bundled.cached() if bundled.available() else None
        typer.echo(json.dumps({
            "name": bundled.NAME,
            "adapter": str(bundled.ADAPTER_DIR) if bundled.available() else None,
            "adapter_sha256": bundled.adapter_sha256() if bundled.available() else None,
            "base": {"name": basemodel.BASE.name, "requirement": basemodel.BASE.requirement,
                     "wheel_sha256": basemodel.BASE.wheel_sha256, "gguf": basemodel.BASE.member,
                     "gguf_sha256": basemodel.BASE.gguf_sha256, "license": basemodel.BASE.license},
            "cache": str(basemodel.cache_dir()),
            "base_cached": str(gguf) if gguf.is_file() else None,
            "merged_cached": str(merged) if merged else None,
        }, indent=1))
