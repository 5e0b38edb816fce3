"""The bundled model, models/fastapply-small: it loads offline through the CLI's default, applies the
simple edits of evals/tasks/simple.jsonl exactly (answers written before it was trained), and its
speculative output is transformers' greedy output token for token. Skipped where the checkout has
no bundled model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fastapply.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "models" / "fastapply-small"
SIMPLE = load_tasks(ROOT / "evals" / "tasks" / "simple.jsonl")

pytestmark = pytest.mark.skipif(not (SHIPPED / "config.json").is_file(),
                                reason="models/fastapply-small is not in this checkout")


@pytest.fixture(scope="module")
def shipped():
    from fastapply.target import load_model

    return load_model(str(SHIPPED), device="cpu", dtype="float32")


@pytest.mark.parametrize("task", SIMPLE, ids=[t.id for t in SIMPLE])
def test_cli_applies_the_simple_edit_exactly_with_the_bundled_model(task, tmp_path, monkeypatch):
    from fastapply import cli

    monkeypatch.setattr(cli, "BUNDLED_MODEL", SHIPPED)
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    path = tmp_path / Path(task.path).name
    path.write_text(task.original)
    args = [str(path), "--edit", task.update, "--instruction", task.instruction, "--engine", "model",
            "--device", "cpu", "--json"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["model"] == str(SHIPPED)
    assert record["text"] == task.expected


@pytest.mark.parametrize("task", SIMPLE[:3], ids=[t.id for t in SIMPLE[:3]])
def test_speculative_output_equals_greedy_generate(shipped, task):
    from fastapply.apply import plan_edit, run_plan, token_budget
    from fastapply.bench import generate_baseline
    from fastapply.target import HFTarget, stop_ids_of

    model, tokenizer = shipped
    plan = plan_edit(tokenizer, task.original, task.update, task.instruction)
    budget, stops = token_budget(model, plan), stop_ids_of(model, tokenizer)
    plain = generate_baseline(model, tokenizer, plan, budget, stops)
    fast = run_plan(HFTarget(model), tokenizer, plan, "fastapply", budget, stops)
    assert fast.token_ids == plain.token_ids
    assert fast.stats.tokens_per_pass > 3  # a model that applies edits copies most of the file
