"""The HTTP backend (``--server`` / ``--backend openai``) against a real ``fastapply serve`` on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from tests.serving import (  # noqa: F401  (fixtures, used by name)
    EXPECTED, ORIGINAL, UPDATE, _fixed_verify_cost, _private_cache, _session_cache, apply_checkpoint, apply_model)

pytest.importorskip("fastapi")
KEY = "test-key"


@pytest.fixture(scope="module")
def server_url(apply_model):
    from fastapply.server import ServeConfig, create_app, running_server

    with running_server(create_app(*apply_model, ServeConfig(api_key=KEY, model_name="tiny"))) as url:
        yield url


@pytest.fixture
def runner(monkeypatch):
    for name in ("FASTAPPLY_MODEL", "FASTAPPLY_API_KEY", "OPENAI_API_KEY", "FASTAPPLY_SERVER", "FASTAPPLY_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


def test_apply_remote_returns_the_new_file_and_usage(server_url):
    from fastapply.client import apply_remote

    text, closed, stats = apply_remote(f"{server_url}/v1", KEY, None, ORIGINAL, UPDATE)
    assert (text, closed) == (EXPECTED, True)
    assert stats["accepted_prediction_tokens"] > 0 and stats["finish_reason"] == "stop"
    assert stats["server"]["passes"] < stats["completion_tokens"]
    text, closed, stats = apply_remote(f"{server_url}/v1", KEY, "any-name", ORIGINAL, UPDATE, send_prediction=False)
    assert (text, closed) == (EXPECTED, True)
    assert stats["accepted_prediction_tokens"] == 0


def test_the_remote_prompt_shows_markers_indented_like_their_code(server_url, runner, tmp_path):
    """With the file's language the messages sent show the update's markers as a local run's prompt does
    (``merge.restyle_markers``), and the CLI passes it: its prompt is the hand-indented update's."""
    from fastapply.client import RemoteBackend

    original = "class Cache:\n\tpass\n\n\ndef make_cache():\n\treturn Cache(128)\n"
    update = "class Cache:\n\tdef clear(self):\n\t\tpass\n\n\ndef make_cache():\n# ... existing code ...\n"
    indented = update.replace("\n# ...", "\n\t# ...")
    with RemoteBackend(f"{server_url}/v1", KEY) as backend:
        assert backend.messages(original, update, "", "python") == backend.messages(original, indented) != \
            backend.messages(original, update)
    path = tmp_path / "cache.py"
    path.write_text(original)

    def prompt_tokens(edit: str) -> int:
        result = runner.invoke(app, [str(path), "--edit", edit, "--server", server_url, "--api-key", KEY,
                                     "--engine", "model", "--force", "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["stats"]["prompt_tokens"]

    assert prompt_tokens(update) == prompt_tokens(indented)  # the tab is a token of its own here


def test_cli_applies_through_the_server(server_url, runner, tmp_path):
    path = tmp_path / "greet.py"
    path.write_text(ORIGINAL)
    result = runner.invoke(app, [str(path), "--edit", UPDATE, "--server", server_url, "--api-key", KEY])
    assert result.exit_code == 0, result.output
    assert result.stdout == EXPECTED
    result = runner.invoke(app, [str(path), "--edit", UPDATE, "--backend", "openai", "--base-url",
                                 f"{server_url}/v1", "--no-prediction", "--json"], env={"FASTAPPLY_API_KEY": KEY})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["text"] == EXPECTED and report["changed"] is True
    assert report["stats"]["accepted_prediction_tokens"] == 0
    result = runner.invoke(app, [str(path), "--edit", UPDATE, "--server", server_url, "--api-key", KEY, "-i"])
    assert result.exit_code == 0, result.output
    assert path.read_text() == EXPECTED


def test_cli_reports_server_errors(server_url, runner, tmp_path):
    path = tmp_path / "greet.py"
    path.write_text(ORIGINAL)
    wrong_key = runner.invoke(app, [str(path), "--edit", UPDATE, "--server", server_url, "--api-key", "nope"])
    assert wrong_key.exit_code == 1 and "401" in wrong_key.stderr and wrong_key.stdout == ""
    cut = runner.invoke(app, [str(path), "--edit", UPDATE, "--server", server_url, "--api-key", KEY,
                              "--max-new-tokens", "5", "-i"])
    assert cut.exit_code == 3 and "cut off" in cut.stderr
    assert path.read_text() == ORIGINAL
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    unreachable = runner.invoke(app, [str(path), "--edit", UPDATE, "--server", f"http://127.0.0.1:{closed_port}"])
    assert unreachable.exit_code == 1 and "cannot reach" in unreachable.stderr
    usage = runner.invoke(app, [str(path), "--edit", UPDATE, "--backend", "openai"])
    assert usage.exit_code == 2 and "--base-url" in usage.stderr


def test_serve_command_serves_a_checkpoint(apply_checkpoint, tmp_path):
    """``fastapply serve`` as a user runs it: a subprocess on a free loopback port, then the CLI through it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "FASTAPPLY_API_KEY": KEY}
    process = subprocess.Popen([sys.executable, "-m", "fastapply", "serve", "--model", str(apply_checkpoint),
                                "--port", str(port), "--device", "cpu"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"fastapply serve did not come up: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
        models = httpx.get(f"{url}/v1/models", headers={"Authorization": f"Bearer {KEY}"}).json()
        assert models["data"][0]["id"] == str(apply_checkpoint)
        path = tmp_path / "greet.py"
        path.write_text(ORIGINAL)
        result = CliRunner().invoke(app, [str(path), "--edit", UPDATE, "--server", url], env={"FASTAPPLY_API_KEY": KEY})
        assert result.exit_code == 0, result.output
        assert result.stdout == EXPECTED
    finally:
        process.terminate()
        try:
            out, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
    assert out == b""  # the server writes nothing to stdout
