"""``fastapply mcp``: the Model Context Protocol server on stdio, driven as an agent's client drives it, in a
subprocess (the merge engine alone, and a tiny model that has learnt one edit)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.serving import (  # noqa: F401  (fixtures, used by name)
    EXPECTED, ORIGINAL, UPDATE, _fixed_verify_cost, _private_cache, _session_cache, apply_checkpoint)

STORE = "import os\n\n\ndef load(name):\n    with open(name) as f:\n        return f.read()\n"
EDIT = '# ... existing code ...\ndef load(name):\n    with open(name, encoding="utf-8") as f:\n' \
       '        return f.read()\n'


class Client:
    """An MCP client of a ``fastapply mcp`` process: one request, one line of reply."""

    def __init__(self, folder, *options: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "fastapply", "mcp", *options], cwd=folder,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ids = 0

    def send(self, message: dict | str) -> None:
        self.process.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        self.process.stdin.flush()

    def reply(self) -> dict:
        return json.loads(self.process.stdout.readline())

    def request(self, method: str, params: dict | None = None) -> dict:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, **({"params": params} if params else {})})
        reply = self.reply()
        assert reply["id"] == self.ids
        return reply

    def edit(self, **arguments) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": "edit_file", "arguments": arguments})["result"]
        return result["isError"], result["content"][0]["text"]

    def close(self) -> int:
        self.process.stdin.close()
        return self.process.wait(timeout=60)


def test_an_agent_edits_creates_and_is_refused_through_the_protocol(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    (tmp_path / "store.py").write_text(STORE)
    client = Client(tmp_path, "--engine", "merge")
    hello = client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "test", "version": "0"}})["result"]
    assert hello["protocolVersion"] == "2025-06-18" and hello["serverInfo"]["name"] == "fastapply"
    assert hello["capabilities"] == {"tools": {"listChanged": False}}
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # answered by nothing:
    assert client.request("ping")["result"] == {}  # the next line is the ping's
    (tool,) = client.request("tools/list")["result"]["tools"]
    assert tool["name"] == "edit_file" and tool["inputSchema"]["required"] == ["path", "code_edit"]

    failed, text = client.edit(path="store.py", code_edit=EDIT)
    assert not failed and text.startswith("edited store.py (by the merge engine, no model run): +1 -1 lines")
    assert '+    with open(name, encoding="utf-8") as f:' in text
    assert (tmp_path / "store.py").read_text() == STORE.replace("open(name)", 'open(name, encoding="utf-8")')
    failed, text = client.edit(path="store.py", code_edit=EDIT)
    assert not failed and "already holds this edit" in text

    failed, text = client.edit(path="pkg/new.py", code_edit="X = 1\n")
    assert not failed and text.startswith("created pkg/new.py") and (tmp_path / "pkg/new.py").read_text() == "X = 1\n"

    before = (tmp_path / "store.py").read_text()
    failed, text = client.edit(path="store.py", code_edit="# ... existing code ...\n    return f.read(10)\n")
    assert failed and "the edit was not applied" in text and "store.py is unchanged" in text
    assert (tmp_path / "store.py").read_text() == before
    failed, text = client.edit(path="../outside.py", code_edit="X = 1\n")
    assert failed and "outside the project folder" in text and not (tmp_path.parent / "outside.py").exists()
    failed, text = client.edit(path="store.py")
    assert failed and "needs path and code_edit" in text

    unknown = client.request("tools/call", {"name": "delete_file", "arguments": {}})
    assert unknown["error"]["code"] == -32602
    assert client.request("resources/list")["error"]["code"] == -32601
    client.send("{not json")
    assert client.reply()["error"]["code"] == -32700
    assert client.close() == 0


def test_the_model_makes_the_edit_the_merge_engine_does_not_decide(tmp_path, apply_checkpoint):
    (tmp_path / "g.py").write_text(ORIGINAL)
    client = Client(tmp_path, "--model", str(apply_checkpoint), "--device", "cpu")
    assert client.request("initialize", {"protocolVersion": "1999-01-01"})["result"]["protocolVersion"] == "2025-11-25"
    failed, text = client.edit(path="g.py", code_edit=UPDATE)
    assert not failed, text
    assert text.startswith("edited g.py (by the model, ") and (tmp_path / "g.py").read_text() == EXPECTED
    assert client.close() == 0


@pytest.mark.parametrize("line", ['{"jsonrpc": "2.0", "id": 1}', '[]', '"text"'])
def test_a_message_that_is_no_request_is_an_invalid_request(line):
    from fastapply.mcp import answer

    assert answer(line, lambda arguments: {})["error"]["code"] == -32600
