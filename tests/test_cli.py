"""The command line, driven through typer's CliRunner with a real (tiny, copy-trained) model."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from tests.samples import SMALL_PY

# The edit deletes the docstring and adds nothing: the copy-trained model may write the file back, which
# validation accepts only for an edit that adds no code (tests/test_validate.py covers the refusal).
UPDATE = '''\
def read_config(path):
    config = {}
# ... existing code ...
'''


@pytest.fixture()
def env(sample_model, tmp_path, monkeypatch):
    _, _, checkpoint = sample_model
    monkeypatch.setenv("FASTAPPLY_MODEL", str(checkpoint))
    monkeypatch.setenv("FASTAPPLY_DEVICE", "cpu")
    path = tmp_path / "config.py"
    path.write_text(SMALL_PY)
    return path


def invoke(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def test_stdout_stdin_and_json_agree(env):
    direct = invoke(env, "--edit", UPDATE)
    assert direct.exit_code == 0, direct.output
    piped = invoke("-", "--edit", UPDATE, input=SMALL_PY)
    assert piped.exit_code == 0 and piped.stdout == direct.stdout
    as_json = invoke(env, "--edit", UPDATE, "--json")
    data = json.loads(as_json.stdout)
    assert data["text"] == direct.stdout
    assert data["changed"] == (direct.stdout != SMALL_PY)
    assert data["language"] == "python"
    assert json.loads(invoke("-", "--edit", UPDATE, "--json", input=SMALL_PY).stdout)["language"] == "python"  # told
    for field in ("passes", "tokens", "tokens_per_pass", "tokens_per_s", "chars_per_s", "accepted_histogram"):
        assert field in data["stats"]
    assert data["stats"]["tokens_per_pass"] > 2  # the copy-trained model accepts long drafts


def test_check_and_diff_agree_with_the_result(env):
    result = invoke(env, "--edit", UPDATE).stdout
    changed = result != SMALL_PY
    assert invoke(env, "--edit", UPDATE, "--check").exit_code == (1 if changed else 0)
    diff = invoke(env, "--edit", UPDATE, "--diff")
    assert diff.exit_code == 0
    assert diff.stdout.startswith("--- a/") == changed
    assert env.read_text() == SMALL_PY  # none of these touched the file


def test_in_place_writes_what_stdout_shows_and_keeps_the_mode(env):
    expected = invoke(env, "--edit", UPDATE).stdout
    env.chmod(0o640)
    result = invoke(env, "--edit", UPDATE, "--in-place")
    assert result.exit_code == 0 and result.stdout == ""
    assert env.read_text() == expected
    assert env.stat().st_mode & 0o777 == 0o640


def test_in_place_failure_mid_write_leaves_the_file_whole(env, monkeypatch):
    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    result = invoke(env, "--edit", UPDATE, "--in-place")
    assert result.exit_code == 1
    assert "No space left on device" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert env.read_text() == SMALL_PY
    assert [p.name for p in env.parent.iterdir()] == ["config.py"]  # no temp file left behind


def test_in_place_leaves_a_file_another_program_wrote_meanwhile(env, monkeypatch):
    """An editor saving FILE (or another agent writing it) while fastapply works on it: the edit is not
    written over that change (exit 1, one line), and without one it is."""
    from fastapply import engine

    real = engine.resolve_edit

    def saved_meanwhile(*args, **kwargs):
        outcome = real(*args, **kwargs)  # the model runs on the file as read
        env.write_text(SMALL_PY + "# saved by an editor\n")
        return outcome

    monkeypatch.setattr(engine, "resolve_edit", saved_meanwhile)
    result = invoke(env, "--edit", UPDATE, "--in-place")
    assert result.exit_code == 1 and "changed while fastapply worked on it" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert env.read_text() == SMALL_PY + "# saved by an editor\n"
    assert [p.name for p in env.parent.iterdir()] == ["config.py"]  # no temp file left behind
    monkeypatch.setattr(engine, "resolve_edit", real)
    env.write_text(SMALL_PY)
    assert invoke(env, "--edit", UPDATE, "--in-place").exit_code == 0


def test_crlf_file_keeps_its_line_endings(env):
    env.write_bytes(SMALL_PY.replace("\n", "\r\n").encode())
    result = invoke(env, "--edit", UPDATE, "--in-place")
    assert result.exit_code == 0
    data = env.read_bytes()
    assert b"\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


@pytest.mark.parametrize("case", ["missing-model", "missing-file", "directory", "binary", "empty-edit",
                                  "both-stdin", "markers-alone", "literal-line-breaks", "instruction-by-merge",
                                  "prose-by-merge"])
def test_bad_input_is_one_clear_line_and_a_nonzero_exit(env, tmp_path, case, monkeypatch):
    before = env.read_bytes()
    args, code, words = [env, "--edit", UPDATE], 1, ""
    if case == "missing-model":
        monkeypatch.setenv("FASTAPPLY_MODEL", str(tmp_path / "no-such-model"))
        words = "does not exist"
    elif case == "missing-file":
        args[0], words = tmp_path / "nope.py", "no such file"
    elif case == "directory":
        args[0], words = tmp_path, "directory"
    elif case == "binary":
        env.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
        before, words = env.read_bytes(), "binary"
    elif case == "empty-edit":
        args[2], code, words = "  ", 2, "edit is empty"
    elif case == "both-stdin":
        args, code, words = ["-", "--edit", "-"], 2, "both come from stdin"
    elif case == "markers-alone":  # an update with no code: nothing to apply, not a silent no-op
        args[2], code, words = "# ... existing code ...\n\n# ... existing code ...\n", 2, "with no code to apply"
    elif case == "literal-line-breaks":  # --edit "...\nb = 2" in a shell: one comment line, a marker
        args[2], code, words = "# ... existing code ...\\nb = 2", 2, "literal \\n"
    elif case == "instruction-by-merge":  # an instruction beside a snippet may ask what the snippet does not show
        args, code, words = [env, "--edit", UPDATE, "--instruction", "Delete main.", "--engine", "merge"], 2, "needs a model"
    elif case == "prose-by-merge":  # an edit that reads as an instruction is one; the file has no main to delete
        args, code, words = [env, "--edit", "delete the unused function main", "--engine", "merge"], 3, "nothing that the file holds"
    result = invoke(*args, input="")
    assert result.exit_code == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastapply: ") and words in lines[0]
    assert result.stdout == ""
    assert env.read_bytes() == before


def test_a_file_on_stdin_is_merged_in_the_language_its_text_tells():
    update = ('# ... existing code ...\ndef read_config(path):\n    """Read a key=value config file."""\n'
              '    config = dict()\n    with open(path) as handle:\n# ... existing code ...\n')
    told = invoke("-", "--edit", update, "--engine", "merge", input=SMALL_PY)
    named = invoke("-", "--edit", update, "--engine", "merge", "--language", "python", input=SMALL_PY)
    assert told.exit_code == named.exit_code == 0
    assert told.stdout == named.stdout == SMALL_PY.replace("config = {}", "config = dict()")


def test_a_file_on_stdin_refused_for_want_of_a_language_says_to_name_one():
    short = "def read_config(path):\n    return path\n"  # YAML reads it as keys too: not told
    update = "def read_config(path):\n    return str(path)\n"
    refused = invoke("-", "--edit", update, "--engine", "merge", input=short)
    assert refused.exit_code == 3 and "no parser" in refused.stderr and "--language" in refused.stderr
    named = invoke("-", "--edit", update, "--engine", "merge", "--language", "python", input=short)
    assert named.exit_code == 0 and named.stdout == update


def test_no_model_without_merge_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    result = invoke(path, "--edit", "y = 2\n", "--engine", "model")
    assert result.exit_code == 2 and "no model" in result.stderr


def test_help_of_every_command_imports_no_model_server_or_plotting_code():
    heavy = {"torch", "transformers", "fastapi", "uvicorn", "httpx", "matplotlib"}
    for command in ([], ["apply"], ["bench"], ["serve"], ["batch"], ["eval"]):
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "fastapply", *command, "--help"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in out.stderr.splitlines()
                    if line.startswith("import time:")}
        assert "typer" in imported and not imported & heavy, (command, imported & heavy)
        assert "Usage:" in out.stdout


def test_help_shows_the_main_form_and_its_options():
    out = subprocess.run([sys.executable, "-m", "fastapply", "--help"], capture_output=True, text=True).stdout
    assert "fastapply FILE --edit TEXT [OPTIONS]" in out
    for option in ("--edit-file", "--in-place", "--diff", "--engine", "--model"):
        assert option in out
    assert "model" in out.split("Commands:")[1]  # the other commands are still listed
