"""Edits written as a coding agent's tool calls (``fastapply.toolcall``): Claude Code's Edit, MultiEdit and
Write, Anthropic's text editor tool, as the API returns them; applied by the merge engine as the tool would,
or placed as SEARCH/REPLACE blocks where the old string drifted."""

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fastapply
from fastapply.cli import app
from fastapply.engine import EditRefused, resolve_edit
from fastapply.errors import UsageError
from fastapply.fileio import decode, encode
from fastapply.toolcall import call_edit

STORE = '''import os


class Store:
    def __init__(self, root):
        self.root = root

    def load(self, name):
        path = os.path.join(self.root, name)
        with open(path) as f:
            return f.read()

    def save(self, name, text):
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            f.write(text)
'''


def merged(original: str, call, path: str | None = None, language: str | None = "python") -> str:
    """The file the merge engine writes (certain, or it raises) for the tool call ``call``."""
    original_text, fmt = decode(original.encode())
    outcome = resolve_edit(original_text, call if isinstance(call, str) else json.dumps(call), language, "merge",
                           path=path)
    return encode(outcome.text, outcome.format(fmt)).decode()


def test_random_edit_calls_on_real_files_give_what_the_tool_writes():
    rng = random.Random(7)
    sources = [path for path in sorted(Path(fastapply.__file__).parent.glob("*.py")) if path.stat().st_size > 2000]
    checked = 0
    while checked < 60:
        text = rng.choice(sources).read_text()
        start = rng.randrange(len(text) - 200)
        old = text[start:start + rng.randint(1, 160)]
        if text.count(old) != 1 or not old.strip():
            continue
        new = rng.choice(["", "x", old.upper(), old + "\n    pass\n", old.replace("\n", "\n\n")])
        if new == old:
            continue
        expected = text.replace(old, new)
        call = {"file_path": "/home/agent/repo/fastapply/mod.py", "old_string": old, "new_string": new}
        assert merged(text, call, "mod.py", None) == expected  # no language: no syntax check, any text
        checked += 1


def test_the_shapes_agents_send_are_read_alike():
    edit = {"old_string": "with open(path) as f:", "new_string": "with open(path, encoding=\"utf-8\") as f:"}
    expected = STORE.replace(edit["old_string"], edit["new_string"])
    editor = {"command": "str_replace", "path": "store.py", "old_str": edit["old_string"],
              "new_str": edit["new_string"]}
    shapes = [
        edit,
        {"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": "/repo/store.py", **edit}},
        {"type": "tool_use", "id": "toolu_2", "name": "str_replace_based_edit_tool", "input": editor},
        {"id": "call_1", "type": "function", "function": {"name": "edit", "arguments": json.dumps(edit)}},
        {"role": "assistant", "tool_calls": [{"function": {"name": "edit", "arguments": json.dumps(editor)}}]},
        {"file_path": "store.py", "edits": [edit]},
    ]
    for shape in shapes:
        assert merged(STORE, shape, "store.py") == expected, shape
    lines = json.dumps(edit) + "\n" + json.dumps({"old_string": "import os\n", "new_string": "import os\nimport io\n"})
    assert merged(STORE, lines) == expected.replace("import os\n", "import os\nimport io\n")  # JSON lines, in order


def test_multiedit_applies_each_edit_to_what_the_ones_before_it_made():
    every = {"old_string": "self.root, name)", "new_string": "self.root, name.strip())", "replace_all": True}
    then = {"old_string": "name.strip())\n        with open(path) as f",
            "new_string": "name.strip())\n        with open(path, encoding=\"utf-8\") as f"}
    calls = {"edits": [every, then]}
    text = merged(STORE, calls)
    assert text.count("name.strip())") == 2 and 'open(path, encoding="utf-8") as f:\n            return' in text


def test_insert_and_create_as_the_text_editor_tool_does():
    inserted = merged(STORE, {"command": "insert", "insert_line": 1, "new_str": "import io"})
    assert inserted.startswith("import os\nimport io\n\n\nclass Store:")
    assert merged(STORE, {"command": "insert", "insert_line": 0, "insert_text": "# store\n"}) == "# store\n" + STORE
    assert merged("a = 1", {"command": "insert", "insert_line": 1, "new_str": "b = 2"}) == "a = 1\nb = 2\n"
    assert merged(STORE, {"command": "create", "path": "store.py", "file_text": "x = 1\n"}) == "x = 1\n"
    assert merged("", {"old_string": "", "new_string": "y = 2\n"}) == "y = 2\n"  # Edit of an empty old string


def test_a_last_line_with_no_newline_keeps_none():
    assert merged("a = 1\nb = 2", {"old_string": "b = 2", "new_string": "b = 3"}) == "a = 1\nb = 3"
    assert merged("a = 1\nb = 2\n", {"old_string": "b = 2\n", "new_string": "b = 3"}) == "a = 1\nb = 3"


def test_a_drifted_old_string_is_placed_as_a_search_replace_block():
    unindented = {"old_string": "def load(self, name):\n    path = os.path.join(self.root, name)\n",
                  "new_string": "def load(self, name):\n    path = os.path.join(self.root, name.strip())\n"}
    assert call_edit(json.dumps(unindented), STORE).startswith("<<<<<<< SEARCH\ndef load(self, name):\n")
    assert merged(STORE, unindented) == STORE.replace("self.root, name)\n        with open(path) as",
                                         "self.root, name.strip())\n        with open(path) as")
    respaced = {"old_string": "        path = os.path.join(self.root,name)\n        with open(path) as f:",
                "new_string": "        path = os.path.join(self.root, name)\n        with open(path, 'rb') as f:"}
    assert merged(STORE, respaced) == STORE.replace("with open(path) as f", "with open(path, 'rb') as f", 1)
    nowhere = {"old_string": "return f.read(100)", "new_string": "return f.read(200)"}
    with pytest.raises(EditRefused, match="hunk 1's old lines are not in the file"):
        merged(STORE, nowhere)


def test_what_the_tool_would_refuse_is_a_usage_error():
    cases = [
        ({"old_string": "self.root", "new_string": "self.base"}, "in the file 3 times"),
        ({"command": "insert", "insert_line": 40, "new_str": "x"}, "inserts after line 40; the file has 16"),
        ({"old_string": "", "new_string": "x = 1\n"}, "creates a file; this one is not empty"),
        ({"old_string": "a", "new_string": "b", "replace_all": "yes"}, "replace_all 'yes'"),
        ({"old_string": 3, "new_string": "b"}, "old_string int, not a string"),
        ({"command": "insert", "insert_line": -1, "new_str": "x"}, "not a line number"),
        ([{"old_string": "nowhere", "new_string": "b"}, {"command": "insert", "insert_line": 0, "new_str": "x"}],
         "tool call 1's old string is not in the file as it is"),
    ]
    for call, message in cases:
        with pytest.raises(UsageError, match=message):
            call_edit(json.dumps(call), STORE)


def test_calls_for_other_files_are_left_aside():
    calls = [{"file_path": "/home/agent/repo/src/store.py", "old_string": "import os", "new_string": "import io"},
             {"file_path": "/home/agent/repo/tests/store.py", "old_string": "import os", "new_string": "import re"},
             {"file_path": "/home/agent/repo/src/other.py", "old_string": "import os", "new_string": "import sys"}]
    assert merged(STORE, calls, "work/src/store.py").startswith("import io\n")  # the longest end of its path
    assert merged(STORE, calls, "work/tests/store.py").startswith("import re\n")
    with pytest.raises(UsageError, match="tool calls are for /home/agent/repo/src/other.py, not elsewhere.py"):
        merged(STORE, calls[2:], "elsewhere.py")


def test_json_that_is_no_tool_call_is_an_edit_as_before():
    settings = '{\n  "name": "demo",\n  "version": 1\n}\n'
    assert call_edit('{\n  "name": "demo",\n  "version": 2\n}\n', settings) is None
    assert call_edit('{"old": "a", "new": "b"}', settings) is None
    calls = '[\n  {\n    "old_string": "a",\n    "new_string": "b"\n  }\n]\n'  # a file of calls: its snippets
    assert call_edit('[\n  {\n    "old_string": "a",\n    "new_string": "c"\n  }\n]\n', calls) is None
    source = 'KEYS = ("old_string", "new_string")\n'  # a file naming the keys, edited by a call
    assert call_edit('{"old_string": "KEYS", "new_string": "NAMES"}', source).endswith("+NAMES = (\"old_string\", "
                                                                                       "\"new_string\")\n")


def test_the_command_line_applies_and_creates_from_tool_calls(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store.py").write_text(STORE)
    call = {"type": "tool_use", "name": "Edit", "input": {"file_path": "/elsewhere/store.py", "old_string": "import os",
                                                          "new_string": "import os.path"}}
    done = CliRunner().invoke(app, ["store.py", "--edit", json.dumps(call), "--in-place"])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "store.py").read_text() == STORE.replace("import os", "import os.path")
    write = {"file_path": "/elsewhere/pkg/new.py", "content": "def h():\n    return 1\n"}
    made = CliRunner().invoke(app, ["pkg/new.py", "--edit", json.dumps(write), "--in-place"])
    assert made.exit_code == 0, made.output
    assert (tmp_path / "pkg/new.py").read_text() == "def h():\n    return 1\n"
    twice = CliRunner().invoke(app, ["store.py", "--edit", json.dumps({"old_string": "self.root", "new_string": "x"})])
    assert twice.exit_code == 2 and "in the file 3 times" in twice.stderr


def test_openai_apply_patch_calls_are_the_patch_they_hold(tmp_path, monkeypatch):
    update = {"type": "apply_patch_call", "call_id": "call_1", "status": "completed",
              "operation": {"type": "update_file", "path": "store.py", "diff": " import os\n+import io\n"}}
    expected = STORE.replace("import os\n", "import os\nimport io\n")
    assert merged(STORE, update, "store.py") == expected  # the first hunk's @@ left out, as it may be
    patch = "*** Begin Patch\n*** Update File: store.py\n@@\n import os\n+import io\n*** End Patch"
    function = {"type": "function_call", "name": "apply_patch", "arguments": json.dumps({"input": patch})}
    assert merged(STORE, function, "store.py") == expected
    delete = {"operation": {"type": "delete_file", "path": "store.py"}}
    with pytest.raises(UsageError, match="deletes a file"):
        merged(STORE, delete, "store.py")
    with pytest.raises(UsageError, match="apply_patch calls and other edit tool calls"):
        merged(STORE, [update, {"old_string": "import os", "new_string": "import re"}], "store.py")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store.py").write_text(STORE)
    create = {"type": "apply_patch_call", "operation": {"type": "create_file", "path": "pkg/new.py",
                                                        "diff": "+X = 1\n"}}
    (tmp_path / "calls.json").write_text(json.dumps([update, create]))
    result = CliRunner().invoke(app, ["batch", "--calls", "calls.json", "--in-place", "--engine", "merge"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "store.py").read_text() == expected and (tmp_path / "pkg/new.py").read_text() == "X = 1\n"


def test_batch_applies_each_files_calls_and_creates_the_files_they_write(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "store.py").write_text(STORE)
    (tmp_path / "src/store.py").write_text(STORE)
    here = str(tmp_path)
    transcript = [
        {"type": "tool_use", "name": "Edit", "input": {"file_path": f"{here}/store.py", "old_string": "import os",
                                                       "new_string": "import io"}},
        {"type": "tool_use", "name": "Write", "input": {"file_path": "src/new.py", "content": "X = 1\n"}},
        {"type": "tool_use", "name": "Edit", "input": {"file_path": f"{here}/src/store.py", "old_string": "import os",
                                                       "new_string": "import re"}},
        {"type": "tool_use", "name": "Edit", "input": {"file_path": f"{here}/store.py", "old_string": "import io\n",
                                                       "new_string": "import io\nimport sys\n"}},
    ]
    (tmp_path / "calls.jsonl").write_text("".join(json.dumps(call) + "\n" for call in transcript))
    result = CliRunner().invoke(app, ["batch", "--calls", "calls.jsonl", "--in-place", "--engine", "merge"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["line"], r["file"], r["ok"]) for r in records] == [
        (1, f"{here}/store.py", True), (2, "src/new.py", True), (3, f"{here}/src/store.py", True)]
    assert (tmp_path / "store.py").read_text().startswith("import io\nimport sys\n\n\nclass Store:")  # both, in order
    assert (tmp_path / "src/store.py").read_text().startswith("import re\n")
    assert (tmp_path / "src/new.py").read_text() == "X = 1\n" and records[1]["created"] is True
    unnamed = CliRunner().invoke(app, ["batch", "--calls", "-"], input='{"old_string": "a", "new_string": "b"}')
    assert unnamed.exit_code == 2 and "tool call 1 names no file" in unnamed.stderr
