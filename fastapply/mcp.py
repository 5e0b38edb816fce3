"""``fastapply mcp``: fastapply as a Model Context Protocol server on stdio, so that a coding agent (Claude
Code, Cursor, Zed, any MCP client) edits files through it: its one tool, ``edit_file``, takes the file's
path and the edit as fastapply takes it (an update snippet with lazy markers, a diff, SEARCH/REPLACE
blocks, an edit tool call) and an optional instruction, and applies it as ``fastapply batch --in-place``
applies one item (``batch.apply_item``): decided, checked, written atomically, or refused with the file
untouched. The answer is the diff of what changed, or why nothing did.

The protocol is JSON-RPC 2.0, one message per line on stdin and stdout (``initialize``, ``ping``,
``tools/list``, ``tools/call``; notifications answered by nothing); nothing else is written to stdout
(the model's loading and progress go to stderr). Requests are answered one at a time, in order. Files are
edited only under the folder the server was started in, as ``fastapply batch --patch`` edits them.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

from fastapply import __version__
from fastapply.batch import apply_item
from fastapply.items import BatchItem
from fastapply.markers import count_markers
from fastapply.plan import ModelRunner
from fastapply.syntax import language_for_path

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # protocol versions spoken, newest first
DIFF_LINES = 400  # the most lines of the change's diff an answer holds

EDIT_FILE = {
    "name": "edit_file",
    "title": "Edit a file (fastapply)",
    "description": (
        "Edit an existing file, or create a new one, by writing only what changes. Give the changed code with "
        "a few unchanged lines around it for placement, and elide the unchanged code between with a lazy "
        "marker comment in the file's language (`// ... existing code ...`, `# ... existing code ...`); code "
        "with no marker is read as the whole new file, unless it is plainly one part of it (a function, a "
        "block). A unified diff, SEARCH/REPLACE blocks, a "
        "`*** Begin Patch` or an Edit tool call's JSON are taken too. fastapply places the edit itself where "
        "that is certain, else its apply model rewrites the file with the edit, and checks the result: the "
        "file is written only when the edit is applied safely. Answers with the diff of the change, or why "
        "the edit was refused (the file then unchanged: make the snippet's placement plainer, show more "
        "unchanged lines around it, and try again)."),
    "inputSchema": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file, relative to the project folder or absolute "
                                                      "within it."},
            "code_edit": {"type": "string", "description": "The edit: the changed code, unchanged parts elided by "
                                                           "lazy markers (or a diff)."},
            "instruction": {"type": "string", "description": "One sentence on what the edit does, for what the "
                                                             "snippet cannot show (a deletion); optional."},
        },
        "required": ["path", "code_edit"],
    },
}


def serve_stdio(run_model: ModelRunner | None, engine: str = "auto", merge_first: bool = False,
                stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
    """Answer the MCP messages of ``stdin`` (default: the process's) on ``stdout`` until stdin ends. The
    process's ``sys.stdout`` is stderr meanwhile: whatever else prints cannot break the protocol."""
    stdin = stdin or sys.stdin
    out = stdout or sys.stdout
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        tool = Tool(run_model, engine, merge_first)
        for line in stdin:
            if not line.strip():
                continue
            reply = answer(line, tool)
            if reply is not None:
                out.write(json.dumps(reply) + "\n")
                out.flush()
    finally:
        sys.stdout = saved


def answer(line: str, tool: Callable[[dict], dict]) -> dict | list | None:
    """The reply to one line of JSON-RPC: a response, a list of them for a batch, or None (notifications)."""
    try:
        message = json.loads(line)
    except ValueError:
        return _error(None, -32700, "parse error: the line is not JSON")
    if isinstance(message, list):
        replies = [reply for one in message if (reply := _reply(one, tool)) is not None]
        return replies or None if message else _error(None, -32600, "invalid request: an empty batch")
    return _reply(message, tool)


def _reply(message, tool: Callable[[dict], dict]) -> dict | None:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return _error(message.get("id") if isinstance(message, dict) else None, -32600,
                      "invalid request: not a JSON-RPC 2.0 request")
    if "id" not in message:
        return None  # a notification (initialized, cancelled): nothing to answer
    ident, method, params = message["id"], message["method"], message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return _result(ident, {"protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
                               "capabilities": {"tools": {"listChanged": False}},
                               "serverInfo": {"name": "fastapply", "version": __version__},
                               "instructions": "Edit files with edit_file: write only the code that changes, the "
                                               "unchanged code between elided by lazy marker comments."})
    if method == "ping":
        return _result(ident, {})
    if method == "tools/list":
        return _result(ident, {"tools": [EDIT_FILE]})
    if method == "tools/call":
        if params.get("name") != EDIT_FILE["name"]:
            return _error(ident, -32602, f"unknown tool: {params.get('name')!r} (fastapply has edit_file)")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return _error(ident, -32602, "invalid params: arguments is not an object")
        return _result(ident, tool(arguments))
    return _error(ident, -32601, f"method not found: {method}")


def _result(ident, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


class Tool:
    """``edit_file``: the arguments of one call -> its result (text content; ``isError`` where the edit was
    not applied, a tool error the agent reads, not a protocol error)."""

    def __init__(self, run_model: ModelRunner | None, engine: str = "auto", merge_first: bool = False) -> None:
        self.run_model, self.engine, self.merge_first = run_model, engine, merge_first
        self.root = Path.cwd().resolve()

    def __call__(self, arguments: dict) -> dict:
        path, edit, instruction = (arguments.get(key) for key in ("path", "code_edit", "instruction"))
        if not isinstance(path, str) or not path.strip() or not isinstance(edit, str):
            return _text("edit_file needs path and code_edit, both strings", error=True)
        if instruction is not None and not isinstance(instruction, str):
            return _text("edit_file's instruction must be a string", error=True)
        file = Path(path) if Path(path).is_absolute() else self.root / path
        if not file.resolve().is_relative_to(self.root):
            return _text(f"{path} is outside the project folder ({self.root}); nothing was done", error=True)
        shown = os.path.relpath(file, self.root)
        try:
            before = file.read_bytes() if file.exists() else None
        except OSError as exc:
            return _text(f"cannot read {shown}: {exc.strerror}", error=True)
        new = before is None and count_markers(edit, language_for_path(shown)) == 0  # shown whole: created
        item = BatchItem(1, str(file), edit, instruction or "", new=new)
        record = apply_item(item, self.run_model, True, self.engine, merge_first=self.merge_first)
        if not record["ok"]:
            return _text(f"the edit was not applied: {record['error']}" + ("" if before is None else
                                                                           f"; {shown} is unchanged"), error=True)
        if not record["written"]:
            return _text(f"{shown} already holds this edit: nothing to change")
        return _text(_summary(shown, before, file, record))


def _summary(shown: str, before: bytes | None, file: Path, record: dict) -> str:
    """What was done: the file, how (the merge engine alone, or the model's passes), and the diff."""
    after = file.read_bytes()
    old = [] if before is None else before.decode("utf-8", "replace").splitlines(True)
    lines = list(difflib.unified_diff(old, after.decode("utf-8", "replace").splitlines(True),
                                      "/dev/null" if before is None else f"a/{shown}", f"b/{shown}"))
    added = sum(line.startswith("+") and not line.startswith("+++") for line in lines)
    removed = sum(line.startswith("-") and not line.startswith("---") for line in lines)
    stats = record.get("stats") or {}
    how = ("by the merge engine, no model run" if record["engine"] == "merge" else
           f"by the model, {stats.get('tokens', '?')} tokens in {stats.get('passes', '?')} passes")
    head = f"{'created' if before is None else 'edited'} {shown} ({how}): +{added} -{removed} lines"
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines[:DIFF_LINES])
    cut = f"... the diff's other {len(lines) - DIFF_LINES} lines left out\n" if len(lines) > DIFF_LINES else ""
    return f"{head}\n\n{body}{cut}"


def _text(text: str, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": error}
