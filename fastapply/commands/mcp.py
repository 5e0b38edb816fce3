"""``fastapply mcp``: the options of the MCP server on stdio; ``fastapply.mcp`` speaks the protocol."""

from __future__ import annotations

from fastapply.cli import (AdapterOpt, ApplyEngine, ApplyEngineOpt, DeviceOpt, DtypeOpt, MaxTokensOpt, ModelOpt,
                           PresetOpt, app, errors, local_model)
from fastapply.errors import UsageError


@app.command("mcp")
def mcp_command(
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = "auto",
    preset: PresetOpt = "default",
    engine: ApplyEngineOpt = ApplyEngine.auto,
    max_new_tokens: MaxTokensOpt = None,
) -> None:
    """Serve an edit_file tool to a coding agent over the Model Context Protocol (stdio): each edit applied to
    a file under the current folder as `fastapply FILE --edit ... --in-place` applies it."""
    with errors():
        from fastapply import bundled
        from fastapply.batch import local_runner
        from fastapply.mcp import serve_stdio
        from fastapply.prompt import get_preset

        get_preset(preset)  # an unknown name is a usage error before the server starts
        model = local_model(model)
        if engine == ApplyEngine.model and not model:
            raise UsageError("no model for --engine model: pass --model PATH_OR_HUB_ID or set FASTAPPLY_MODEL")
        uses_model = engine != ApplyEngine.merge and bool(model)
        run_model = local_runner(model, device, dtype, adapter, preset, max_new_tokens=max_new_tokens,
                                 lazy=True) if uses_model else None  # loaded by the first edit that needs it
        serve_stdio(run_model, engine.value, merge_first=model == bundled.NAME)
