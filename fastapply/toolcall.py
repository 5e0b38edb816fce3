"""Reading an edit written as a coding agent's file-editing tool call: the arguments of Claude Code's
``Edit`` (``old_string``, ``new_string``, ``replace_all``), ``MultiEdit`` (``edits``) and ``Write``
(``file_path``, ``content``), or of Anthropic's text editor tool (``command``: ``str_replace``,
``insert``, ``create``), as JSON: alone, wrapped as the call an API returns (a ``tool_use`` block's
``input``, an OpenAI tool call's ``function.arguments``), or several (a list, a message's ``tool_calls``,
one per line), applied in order. Calls naming another file are left aside. OpenAI's ``apply_patch``
calls (the function tool's ``input``, the Responses API's ``operation``: ``update_file``, ``create_file``,
``delete_file`` with a V4A ``diff``) are the ``*** Begin Patch`` text they hold (``as_patch``), read as
that diff is.

Where every call applies exactly as the tool would (each old string in the file once, or at least once
with ``replace_all``, an insert's line in the file), the edit is the diff from the file to that result as
git writes it, its ``index`` line naming both: certain, the tool's own result (``patch.made_by_git``),
in a file that holds hunk headers of its own too. Where an old string is not in the file as it is (re-indented,
its whitespace or a line drifted: the tool's "string not found"), the calls are SEARCH/REPLACE blocks,
placed as ``patch.py`` places any (re-indented, a stale line), else read as the snippet they amount to.
An old string found more than once, an insert beyond the file's end, a file created over one that is
not empty: usage errors, as the tool gives. A file that holds such calls itself is edited by snippets
of it (``_of_calls``).

>>> edit = call_edit('{"old_string": "b = 2", "new_string": "b = 3"}', "a = 1\\nb = 2\\n")
>>> print(edit)
index 223ca50d9950..2641db45a942
@@ -1,2 +1,2 @@
 a = 1
-b = 2
+b = 3
<BLANKLINE>
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from fastapply.diffs import blob_id, read_patch
from fastapply.errors import UsageError
from fastapply.fileparts import part_for

_EDIT = {"old_string", "new_string"}  # Claude Code's Edit, and each of MultiEdit's edits
_EDIT_KEYS = _EDIT | {"replace_all", "file_path"}
_EDITOR_KEYS = {"command", "path", "old_str", "new_str", "insert_line", "insert_text", "file_text"}
_EDITOR_COMMANDS = ("str_replace", "insert", "create")
_KEY_NAMES = ("old_string", "new_string", "old_str", "new_str", "insert_line", "file_text")
_BRACKETS = {"", "{", "}", "[", "]", "},", "],"}
_OPERATIONS = {"update_file": "Update", "create_file": "Add", "delete_file": "Delete"}  # apply_patch's


@dataclass(frozen=True)
class Call:
    """One call: ``replace`` (``old`` by ``new``, every time with ``every``), ``insert`` (``new`` after
    ``line`` lines), ``write`` (the file made ``new``) or ``patch`` (``new`` a ``*** Begin Patch`` text)."""

    kind: str
    new: str
    old: str = ""
    every: bool = False
    line: int = 0
    path: str | None = None


def call_edit(edit: str, original: str, path: str | None = None) -> str | None:
    """The diff (or SEARCH/REPLACE blocks) that the tool calls ``edit`` holds amount to for the file
    ``original`` (LF text) at ``path`` (None or ``-``: calls for any file apply), as above; None where
    ``edit`` is no such call."""
    calls = _read(edit)
    if calls is None or _of_calls(edit, original):
        return None
    patch = _patch(calls)
    if patch is not None:
        return patch if path is None else part_for(patch, path)
    mine = _mine(calls, path)
    if not mine:
        names = ", ".join(dict.fromkeys(call.path for call in calls if call.path is not None))
        raise UsageError(f"the edit's tool calls are for {names}, not {path}")
    result = _applied(original, mine)
    if result is not None:
        return _diff(original, result)
    return "".join(f"<<<<<<< SEARCH\n{_line_ended(call.old)}=======\n{_line_ended(call.new)}>>>>>>> REPLACE\n"
                   for call in mine)


def as_patch(text: str) -> str | None:
    """The ``*** Begin Patch`` text of the ``apply_patch`` calls ``text`` holds, None where it holds none.
    A usage error where it holds other calls beside them."""
    calls = _read(text)
    return None if calls is None else _patch(calls)


def _patch(calls: list[Call]) -> str | None:
    if not any(call.kind == "patch" for call in calls):
        return None
    if not all(call.kind == "patch" for call in calls):
        raise UsageError("the edit holds apply_patch calls and other edit tool calls: give one kind")
    return "".join(_line_ended(call.new) for call in calls)


def creates(edit: str, path: str) -> bool:
    """Whether ``edit`` is tool calls whose first call for the file at ``path`` creates it: a ``Write``, a
    ``create``, or an ``Edit`` of an empty old string (or an ``apply_patch`` call adding it)."""
    calls = _read(edit) or []
    if (patch := _patch(calls)) is not None:
        return (read := read_patch(part_for(patch, path))) is not None and read.creates
    mine = _mine(calls, path)
    return bool(mine) and (mine[0].kind == "write" or (mine[0].kind == "replace" and not mine[0].old))


def files_named(text: str) -> list[tuple[int, str]]:
    """The files that the tool calls ``text`` holds name, in the order they are first named, each with the
    number of its first call (from 1): ``fastapply batch --calls``. A usage error where ``text`` is not
    tool calls, or a call names no file."""
    calls = _read(text)
    if calls is None:
        raise UsageError("the input is not edit tool calls (Edit, MultiEdit or Write; str_replace, insert or create) "
                         "as JSON")
    unnamed = next((n for n, call in enumerate(calls, 1) if call.path is None), None)
    if unnamed is not None:
        raise UsageError(f"tool call {unnamed} names no file (file_path or path)")
    first: dict[str, int] = {}
    for n, call in enumerate(calls, 1):
        first.setdefault(call.path, n)
    return [(n, path) for path, n in first.items()]


def _of_calls(edit: str, original: str) -> bool:
    """Whether ``edit`` is a snippet of a file that holds tool calls itself (a log of calls, a tool's tests):
    the file names their keys, and the edit shows a line of it (other than a bracket)."""
    if not any(f'"{key}"' in original for key in _KEY_NAMES):
        return False
    lines = {line.strip() for line in original.splitlines()} - _BRACKETS
    return any(line.strip() in lines for line in edit.splitlines())


def _mine(calls: list[Call], path: str | None) -> list[Call]:
    """The calls for the file at ``path``: those naming no file, and of the others those whose path ends
    as the file's does in the most parts, its name at least (an agent names files by their absolute path
    on its own machine)."""
    if path in (None, "-"):
        return calls
    here = Path(path).resolve().parts[::-1]

    def shared(call: Call) -> int:
        named = Path(call.path).parts[::-1]
        return next((n for n, (a, b) in enumerate(zip(here, named)) if a != b), min(len(here), len(named)))

    best = max((shared(call) for call in calls if call.path is not None), default=0)
    return [call for call in calls if call.path is None or (best and shared(call) == best)]


def _read(text: str) -> list[Call] | None:
    """The calls of JSON ``text`` (or of JSON lines), None where it holds something else."""
    text = text.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            return None
    calls = _calls(data)
    return calls or None


def _calls(data) -> list[Call] | None:
    if isinstance(data, list):
        read = [_calls(item) for item in data]
        return None if not data or any(calls is None for calls in read) else [call for calls in read for call in calls]
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("tool_calls"), list):  # an OpenAI message
        return _calls(data["tool_calls"])
    if isinstance(data.get("function"), dict):  # an OpenAI tool call
        return _calls(data["function"])
    if "arguments" in data:  # its function: the arguments as a JSON string
        arguments = data["arguments"]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return None
        return _calls(arguments)
    if isinstance(data.get("input"), dict):  # Anthropic's tool_use block
        return _calls(data["input"])
    if isinstance(data.get("operation"), dict):  # the Responses API's apply_patch_call
        return _calls(data["operation"])
    keys = set(data)
    if keys == {"input"} and isinstance(data["input"], str) and "*** Begin Patch" in data["input"]:
        return [Call("patch", data["input"])]  # apply_patch, the function tool's arguments
    if data.get("type") in _OPERATIONS and keys <= {"type", "path", "diff"}:
        return [_operation(data)]
    path = _string(data, "file_path") if "file_path" in keys else None
    if _EDIT <= keys <= _EDIT_KEYS:
        return [_replace(data, path)]
    if "edits" in keys and keys <= {"edits", "file_path"} and isinstance(data["edits"], list) and data["edits"]:
        if not all(isinstance(one, dict) and _EDIT <= set(one) <= _EDIT_KEYS - {"file_path"} for one in data["edits"]):
            return None
        return [_replace(one, path) for one in data["edits"]]
    if keys == {"file_path", "content"}:  # Claude Code's Write
        return [Call("write", _string(data, "content"), path=_string(data, "file_path"))]
    if data.get("command") in _EDITOR_COMMANDS and keys <= _EDITOR_KEYS:
        return [_editor(data)]
    return None


def _replace(data: dict, path: str | None) -> Call:
    """An ``Edit`` call, or one of ``MultiEdit``'s edits."""
    every = data.get("replace_all", False)
    if not isinstance(every, bool):
        raise UsageError(f"the edit's tool call has replace_all {every!r}, not true or false")
    return Call("replace", _string(data, "new_string"), _string(data, "old_string"), every, path=path)


def _operation(data: dict) -> Call:
    """An ``apply_patch`` operation, as the ``*** Begin Patch`` text of its file."""
    path, action = _string(data, "path"), _OPERATIONS[data["type"]]
    diff = "" if action == "Delete" else _string(data, "diff")
    if action == "Update" and not diff.startswith("@@"):
        diff = "@@\n" + diff  # its first hunk's header may be left out
    return Call("patch", f"*** Begin Patch\n*** {action} File: {path}\n{_line_ended(diff)}*** End Patch\n")


def _editor(data: dict) -> Call:
    """A call of Anthropic's text editor tool."""
    path = _string(data, "path") if "path" in data else None
    command = data["command"]
    if command == "str_replace":
        if "old_str" not in data:
            raise UsageError("the edit's str_replace tool call has no old_str")
        return Call("replace", _string(data, "new_str") if "new_str" in data else "", _string(data, "old_str"),
                    path=path)
    if command == "insert":
        line = data.get("insert_line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 0:
            raise UsageError(f"the edit's insert tool call has insert_line {line!r}, not a line number")
        key = "insert_text" if "insert_text" in data else "new_str"
        return Call("insert", _string(data, key), line=line, path=path)
    return Call("write", _string(data, "file_text"), path=path)


def _string(data: dict, key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise UsageError(f"the edit's tool call has {key} {'missing' if value is None else type(value).__name__}, "
                         f"not a string")
    return value.replace("\r\n", "\n")


def _applied(original: str, calls: list[Call]) -> str | None:
    """The file the calls make of ``original``, each applied to what the ones before it made, as the tool
    applies them; None where an old string is not in the file as it is."""
    text = original
    for n, call in enumerate(calls, 1):
        which = f"tool call {n}" if len(calls) > 1 else "the tool call"
        if call.kind == "write":
            text = call.new
        elif call.kind == "insert":
            lines = text.splitlines(keepends=True)
            if call.line > len(lines):
                raise UsageError(f"{which} inserts after line {call.line}; the file has {len(lines)}")
            head = "".join(lines[:call.line])
            text = (_line_ended(head) if head else "") + _line_ended(call.new) + "".join(lines[call.line:])
        elif not call.old:
            if text.strip():
                raise UsageError(f"{which} has an empty old string, which creates a file; this one is not empty")
            text = call.new
        elif (found := text.count(call.old)) == 0:
            if any(other.kind != "replace" for other in calls):
                raise UsageError(f"{which}'s old string is not in the file as it is")
            return None
        elif found > 1 and not call.every:
            raise UsageError(f"{which}'s old string is in the file {found} times: show more lines around it to "
                             f"make it one, or replace it every time (replace_all)")
        else:
            text = text.replace(call.old, call.new, -1 if call.every else 1)
    return text


def _line_ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _diff(original: str, text: str) -> str:
    """The unified diff from ``original`` to ``text`` as git writes it: the ``index`` line of their object
    ids (of LF text: ``diffs.named_ends`` reads it of a CRLF file too), three lines of context, ``\\ No
    newline at end of file`` where a last line has none, ``--- /dev/null`` where ``original`` is empty."""
    old, new = original.splitlines(keepends=True), text.splitlines(keepends=True)
    creates = not old and bool(new)
    lines = [line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in
             difflib.unified_diff(old, new, "/dev/null" if creates else "a/file", "b/file", n=3)]
    return f"index {blob_id(original.encode())[:12]}..{blob_id(text.encode())[:12]}\n" + "".join(
        lines if creates else lines[2:])  # the file's own name is not said: it is the file given
