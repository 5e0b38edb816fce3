"""``fastapply eval`` through a server: one shared HTTP backend called from worker threads, against a real
``fastapply serve`` on loopback serving the tiny Llama that has learnt the serving tests' example."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from fastapply.tasks import Task
from tests.evaltasks import make_tasks
from tests.serving import (  # noqa: F401  (fixtures, used by name)
    EXPECTED, ORIGINAL, UPDATE, _fixed_verify_cost, _private_cache, _session_cache, apply_checkpoint, apply_model)

pytest.importorskip("fastapi")
KEY = "eval-key"


def write_tasks(path) -> list[Task]:
    """Three tasks the model has learnt (the same edit under three names) and one it has not."""
    source = {"package": "example", "from": "1.0", "to": "1.1", "license": "MIT"}
    learnt = [Task(f"greet-{i}", "python", f"greet{i}.py", ORIGINAL, UPDATE, "", EXPECTED, source) for i in range(3)]
    tasks = learnt + make_tasks()[:1]
    path.write_text("".join(json.dumps(t.to_json()) + "\n" for t in tasks))
    return tasks


@pytest.fixture()
def concurrent_backend(monkeypatch):
    """Counts the ``RemoteBackend``s made, and makes the first two edits wait for each other: they finish only
    if two are in flight at once (else the barrier breaks and those tasks record an error)."""
    from fastapply.client import RemoteBackend

    made, barrier = [], threading.Barrier(2, timeout=60)
    calls = iter(range(1_000_000))
    original_init, original_apply = RemoteBackend.__init__, RemoteBackend.apply

    def init(self, *args, **kwargs):
        made.append(self)
        original_init(self, *args, **kwargs)

    def apply(self, *args, **kwargs):
        if next(calls) < 2:
            barrier.wait()
        return original_apply(self, *args, **kwargs)

    monkeypatch.setattr(RemoteBackend, "__init__", init)
    monkeypatch.setattr(RemoteBackend, "apply", apply)
    return made


def test_eval_sends_tasks_to_a_server_from_worker_threads(apply_model, tmp_path, monkeypatch, concurrent_backend):
    from fastapply.server import ServeConfig, create_app, running_server

    for name in ("FASTAPPLY_MODEL", "FASTAPPLY_SERVER", "FASTAPPLY_BACKEND", "FASTAPPLY_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    out = tmp_path / "out"
    with running_server(create_app(*apply_model, ServeConfig(api_key=KEY, model_name="tiny"))) as url:
        result = CliRunner().invoke(app, ["eval", "--tasks", str(tmp_path / "tasks.jsonl"), "--server", url,
                                          "--api-key", KEY, "--workers", "2", "--max-new-tokens", "80",
                                          "--out", str(out), "--json"])
        served = httpx.get(f"{url}/health").json()["served"]
        bare = CliRunner().invoke(app, ["eval", "--tasks", str(tmp_path / "tasks.jsonl"), "--backend", "openai",
                                        "--base-url", f"{url}/v1", "--no-prediction", "--max-new-tokens", "80",
                                        "--limit", "1", "--out", str(tmp_path / "bare")], env={"FASTAPPLY_API_KEY": KEY})
    assert result.exit_code == 0, result.output
    assert len(concurrent_backend) == 2  # one shared backend for all the worker threads of each run
    assert served == len(tasks)
    assert bare.exit_code == 0, bare.output
    unpredicted = json.loads((tmp_path / "bare" / "results" / "server" / "greet-0.json").read_text())
    assert unpredicted["output"] == EXPECTED and unpredicted["options"]["send_prediction"] is False
    assert unpredicted["speed"]["accepted_prediction_tokens"] == 0
    records = {t.id: json.loads((out / "results" / "server" / f"{t.id}.json").read_text()) for t in tasks}
    for task in tasks:
        record = records[task.id]
        assert record["error"] is None and record["policy"] == "server" and record["engine"] == "model"
        assert record["model"] == f"{url}/v1"  # the model source is the server
        assert record["options"]["server"] == f"{url}/v1" and record["options"]["send_prediction"] is True
        assert "eval-key" not in json.dumps(record)
    for task in tasks[:3]:
        record = records[task.id]
        assert record["output"] == EXPECTED and record["closed"] and record["accuracy"]["exact"]
        assert record["speed"]["accepted_prediction_tokens"] > 0 and record["speed"]["passes"] > 0
    summary = json.loads(result.stdout)
    assert summary["model"] == f"{url}/v1" and summary["tasks"] == len(tasks)
    assert summary["policies"]["server"]["results"] == len(tasks)
    assert summary["policies"]["server"]["exact"] == 0.75  # the three learnt tasks; not the fourth
    assert f"--base-url {url}/v1" in summary["command"] and KEY not in summary["command"]


def test_eval_server_options_are_checked(tmp_path, monkeypatch):
    for name in ("FASTAPPLY_MODEL", "FASTAPPLY_SERVER", "FASTAPPLY_BACKEND", "FASTAPPLY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    write_tasks(tmp_path / "tasks.jsonl")
    base = ["eval", "--tasks", str(tmp_path / "tasks.jsonl"), "--out", str(tmp_path / "out")]
    for extra, words in ((["--engine", "replay", "--server", "http://127.0.0.1:9"], "--engine model and auto only"),
                         (["--server", "http://127.0.0.1:9", "--draft", "fastapply"], "the only policy"),
                         (["--backend", "openai"], "--base-url"),
                         (["--workers", "2", "--model", "some-model"], "one task at a time")):
        result = CliRunner().invoke(app, base + extra)
        assert result.exit_code == 2 and words in result.stderr, (extra, result.output)
