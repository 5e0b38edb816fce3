"""``fastapply serve``: the options of the warm-model server; ``fastapply.server`` does the serving."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fastapply.cli import (AdapterOpt, DeviceOpt, DtypeOpt, ModelOpt, PresetOpt, VerboseOpt, app, errors, local_model,
                           stderr)
from fastapply.errors import FastapplyError, UsageError


@app.command("serve")
def serve_command(
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
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
    preset: PresetOpt = "default",
    verbose: VerboseOpt = False,
) -> None:
    """Keep one model warm behind an OpenAI-compatible API (chat completions with `prediction`, edits in Morph's
    apply form, /v1/apply)."""
    with errors():
        try:
            from fastapply.server import ServeConfig, serve
        except ImportError as exc:
            raise FastapplyError(f"serve needs the serve extra ({exc.name} is missing): "
                                 "pip install 'fastapply[serve]'") from None
        from fastapply import bundled
        from fastapply.prompt import get_preset

        get_preset(preset)  # an unknown name is a usage error before the model loads
        model = local_model(model)
        if not model:
            raise UsageError("no model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
            stderr.print(f"fastapply: warning: serving on {host} without --api-key: anyone who can reach it may use it")
        serve(model, device, dtype, adapter, ServeConfig(host=host, port=port, api_key=api_key, queue_size=queue_size,
                                                         max_body_bytes=max_body_bytes,
                                                         model_name=served_model_name or model,
                                                         merge_first=model == bundled.NAME, preset=preset),
              log_level="debug" if verbose else "info", threads=threads)

