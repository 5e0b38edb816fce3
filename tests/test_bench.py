"""``fastapply bench``: every method on the same model in one run, a table and JSON."""

import json

import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from tests.samples import SMALL_PY

EDITED = SMALL_PY.replace("    config = {}\n", "    config = {}  # parsed values\n")
UPDATE = '''\
# ... existing code ...
    config = {}  # parsed values
# ... existing code ...
'''


@pytest.mark.parametrize("acceptance", ["model", "replay"])
def test_bench_runs_every_method_and_all_agree_with_plain(sample_model, tmp_path, acceptance):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    (tmp_path / "a.expected").write_text(EDITED)
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, [
        "bench", "--model", str(checkpoint), "--device", "cpu", "--file", str(tmp_path / "a.py"),
        "--edit-file", str(tmp_path / "a.edit"), "--expected", str(tmp_path / "a.expected"),
        "--acceptance", acceptance, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "fastapply bench" in result.stdout
    data = json.loads(out.read_text())
    rows = {row["method"]: row for row in data["rows"]}
    assert set(rows) == {"plain", "prompt-lookup", "ngram", "fastapply"}
    assert all(row["same_as_plain"] for row in rows.values())  # lossless, whatever the method
    assert rows["plain"]["speedup_plain"] == 1.0
    assert rows["plain"]["passes"] == rows["plain"]["tokens"] - 1  # one token a pass (after the prefill)
    assert rows["fastapply"]["passes"] < rows["prompt-lookup"]["passes"]  # the original file is the draft
    assert data["parameters"] > 0
    limits = {row["limit_s"] for row in rows.values()}
    assert len(limits) == 1 and limits.pop() > 0  # one limit per case, whatever the method
    assert rows["plain"]["vs_limit"] > 1  # token-by-token decoding cannot beat one pass over it all
    assert data["summary"]["fastapply"]["vs_limit"]["median"] == rows["fastapply"]["vs_limit"]


def test_the_limit_without_an_expected_file_uses_plain_answer(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--device", "cpu", "--file",
                                      str(tmp_path / "a.py"), "--edit-file", str(tmp_path / "a.edit"),
                                      "--methods", "plain,fastapply", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert all(row["limit_s"] > 0 for row in json.loads(out.read_text())["rows"])
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--device", "cpu", "--file",
                                      str(tmp_path / "a.py"), "--edit-file", str(tmp_path / "a.edit"),
                                      "--methods", "fastapply", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["rows"][0]["vs_limit"] == 0  # no reference, no limit: shown as "-"


def test_replay_needs_the_expected_file(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    result = CliRunner().invoke(app, ["bench", "--model", str(checkpoint), "--file", str(tmp_path / "a.py"),
                                      "--edit-file", str(tmp_path / "a.edit"), "--acceptance", "replay"])
    assert result.exit_code == 2 and "expected" in result.stderr
