"""The CLI's --engine, --force and --language: merge alone, refusals that leave the file untouched,
and the model path checked by validation."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from tests.samples import SAMPLE_EXPECTED, SAMPLE_PY, SAMPLE_UPDATE

runner = CliRunner()
UNCERTAIN = "# ... existing code ...\n    return 0\n# ... existing code ...\n"  # `return 0` fits nowhere for sure


def _files(tmp_path, text=SAMPLE_PY, update=SAMPLE_UPDATE, name="tool.py"):
    path, edit = tmp_path / name, tmp_path / "update.txt"
    path.write_bytes(text.encode())
    edit.write_text(update)
    return path, edit


def test_merge_engine_prints_a_certain_merge(tmp_path):
    path, edit = _files(tmp_path)
    result = runner.invoke(app, [str(path), "--engine", "merge", "--edit-file", str(edit)])
    assert result.exit_code == 0, result.output
    assert result.stdout == SAMPLE_EXPECTED


def test_merge_engine_refuses_an_uncertain_merge_and_leaves_the_file(tmp_path):
    path, edit = _files(tmp_path, update="# ... existing code ...\nprint('new')\n# ... existing code ...\n")
    result = runner.invoke(app, [str(path), "--engine", "merge", "--edit-file", str(edit), "--in-place"])
    assert result.exit_code == 3
    assert "not certain" in result.stderr
    assert path.read_bytes() == SAMPLE_PY.encode()


def test_auto_without_a_model_merges_in_place_keeping_crlf(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    path, edit = _files(tmp_path, text=SAMPLE_PY.replace("\n", "\r\n"))
    result = runner.invoke(app, [str(path), "--edit-file", str(edit), "--in-place"])
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == SAMPLE_EXPECTED.replace("\n", "\r\n").encode()


def test_auto_without_a_model_refuses_what_it_cannot_merge(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    path, edit = _files(tmp_path, update="make main() print to stderr")
    result = runner.invoke(app, [str(path), "--edit-file", str(edit)])
    assert result.exit_code == 3
    assert "no model is configured" in result.stderr


def test_model_engine_needs_a_model(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    path, edit = _files(tmp_path)
    result = runner.invoke(app, [str(path), "--engine", "model", "--edit-file", str(edit)])
    assert result.exit_code == 2


def test_language_option_overrides_the_extension(tmp_path):
    path, edit = _files(tmp_path, name="tool.txt")
    result = runner.invoke(app, [str(path), "--engine", "merge", "--edit-file", str(edit)])
    assert result.exit_code == 3  # no parser for .txt: never certain
    result = runner.invoke(app, [str(path), "--engine", "merge", "--language", "python", "--edit-file", str(edit)])
    assert result.exit_code == 0 and result.stdout == SAMPLE_EXPECTED
    result = runner.invoke(app, [str(path), "--language", "cobol", "--edit-file", str(edit)])
    assert result.exit_code == 2


def test_json_reports_the_engine(tmp_path):
    import json

    path, edit = _files(tmp_path)
    result = runner.invoke(app, [str(path), "--engine", "merge", "--edit-file", str(edit), "--json"])
    report = json.loads(result.stdout)
    assert (report["engine"], report["merge"]["confidence"], report["stats"]) == ("merge", "certain", None)
    assert report["ok"] is True and report["refused"] is None


def test_json_reports_a_refusal_on_stdout_and_a_model_answers_problems(tmp_path, tiny_checkpoint):
    """A tool reading --json learns of a refusal from stdout too (exit 3 and the one line on stderr stay)."""
    import json

    path, edit = _files(tmp_path, name="tool.txt")  # no parser for .txt: the merge is never certain
    result = runner.invoke(app, [str(path), "--engine", "merge", "--edit-file", str(edit), "--json"])
    assert result.exit_code == 3 and result.stderr.startswith("fastapply: refused: the merge is not certain")
    report = json.loads(result.stdout)
    assert (report["ok"], report["text"], report["changed"], report["refused"]["reasons"]) == (
        False, None, None, ["uncertain-merge"])
    assert report["refused"]["message"] in result.stderr and report["merge"]["confidence"] != "certain"
    result = runner.invoke(app, [str(path), "--language", "python", "--model", str(tiny_checkpoint), "--device",
                                 "cpu", "--engine", "model", "--edit-file", str(edit), "--max-new-tokens", "8",
                                 "--json"])
    report = json.loads(result.stdout)  # a random model's answer, cut off: refused, its problems named
    assert result.exit_code == 3 and not report["ok"] and report["problems"] and report["stats"]["tokens"] >= 1
    assert path.read_bytes() == SAMPLE_PY.encode()


def test_model_output_failing_validation_is_refused_unless_forced(tmp_path, tiny_checkpoint):
    # a random tiny model cannot do the edit: its answer is cut off (or wrong), so validation refuses it
    path, edit = _files(tmp_path)
    args = [str(path), "--model", str(tiny_checkpoint), "--device", "cpu", "--edit-file", str(edit),
            "--max-new-tokens", "8", "--in-place"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    assert "truncated" in result.stderr or "stopped before its end" in result.stderr
    assert path.read_bytes() == SAMPLE_PY.encode()
    result = runner.invoke(app, [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert "written because of --force" in result.stderr
    assert path.read_bytes() != SAMPLE_PY.encode()


def test_merge_engine_cli_does_not_import_torch(tmp_path):
    big = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(80))  # 400 lines
    path, edit = _files(tmp_path, text=big,
                        update="# ... existing code ...\ndef f40(x):\n    y = x + 40\n    return -y\n# ... existing code ...\n")
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "fastapply", str(path), "--engine", "merge",
                          "--edit-file", str(edit)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "return -y" in out.stdout
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in out.stderr.splitlines()
                if line.startswith("import time:")}
    assert "typer" in imported and "torch" not in imported and "transformers" not in imported


def test_merge_first_returns_a_certain_merge_without_running_the_model():
    from fastapply.engine import resolve_edit

    def model_must_not_run(shown, update, instruction, merged, watch):
        raise AssertionError("the model ran")

    outcome = resolve_edit(SAMPLE_PY, SAMPLE_UPDATE, "python", "auto", model_must_not_run, merge_first=True)
    assert outcome.engine == "merge" and outcome.text == SAMPLE_EXPECTED


def test_a_merge_that_changes_nothing_does_not_settle_an_instruction():
    """A snippet of context and markers beside "Delete the function b, and its tests." merges to the file
    unchanged, certain: the model, not the merge, answers the instruction (it asks more than
    ``instructed.py`` applies); with no model nothing is written. The same snippet alone (one already
    applied) is settled by the merge: the file unchanged."""
    from fastapply.engine import EditRefused, ModelRun, resolve_edit

    original = "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"
    expected = "def a():\n    return 1\n\n\ndef c():\n    return 3\n"
    update = "def a():\n    return 1\n# ... existing code ...\ndef c():\n    return 3\n"
    drafts = []

    def run_model(shown, update, instruction, merged, watch):
        drafts.append(merged)
        return ModelRun(expected, True, {})

    outcome = resolve_edit(original, update, "python", "auto", run_model,
                           instruction="Delete the function b, and its tests.", merge_first=True)
    assert outcome.engine == "model" and outcome.text == expected and drafts == [original]
    with pytest.raises(EditRefused) as refused:
        resolve_edit(original, update, "python", "auto", None, instruction="Delete the function b, and its tests.")
    assert refused.value.reasons == ("uncertain-merge",) and "changes nothing" in str(refused.value)
    settled = resolve_edit(original, update, "python", "auto", run_model, merge_first=True)
    assert settled.engine == "merge" and settled.text == original and len(drafts) == 1


def test_a_model_that_leaves_the_file_unchanged_beside_an_instruction_is_refused_unless_forced():
    """The instruction asks for a change the snippet does not show; an answer that is the original
    unchanged did not make it (fastapply-small so answered "Delete the function save."), and is not
    written as if it had."""
    from fastapply.engine import EditRefused, ModelRun, resolve_edit

    original = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    update = "# ... existing code ...\n"

    def unchanged(shown, update, instruction, merged, watch):
        return ModelRun(shown, True, {})

    for engine in ("auto", "model"):
        with pytest.raises(EditRefused) as refused:
            resolve_edit(original, update, "python", engine, unchanged, instruction="Delete the function b.")
        assert refused.value.reasons == ("edit-not-applied",)
        assert "the instruction asks for a change" in str(refused.value)
    forced = resolve_edit(original, update, "python", "auto", unchanged, force=True, instruction="Delete b.")
    assert forced.text == original and [p.name for p in forced.problems] == ["edit-not-applied"]


def test_an_edit_that_reads_as_an_instruction_is_shown_to_the_model_as_its_instruction():
    """fastapply-small, shown "delete the function load" as the update, wrote the sentence back as the
    file; it was trained to read an instruction alone in the instruction's place, with no snippet."""
    from fastapply.engine import EditRefused, ModelRun, resolve_edit
    from fastapply.errors import UsageError

    original = "def load(p):\n    return open(p).read()\n\n\ndef save(p, t):\n    open(p, 'w').write(t)\n"
    deleted = "def save(p, t):\n    open(p, 'w').write(t)\n"
    seen = []

    def run_model(shown, update, instruction, merged, watch):
        seen.append((update, instruction))
        return ModelRun(deleted if instruction else shown, True, {})

    outcome = resolve_edit(original, "delete the  function load", "python", "auto", run_model)
    assert seen == [("", "delete the function load")] and outcome.text == deleted
    code = "def unrelated():\n    return compute(1) + 2"  # code sharing no line with the file: a snippet
    with pytest.raises(EditRefused):
        resolve_edit(original, code, "python", "auto", run_model)
    assert seen[-1] == (code, "")
    applied = resolve_edit(original, "delete the function load", "python", "merge")  # plain words: no model needed
    assert (applied.engine, applied.text) == ("merge", deleted)
    with pytest.raises(UsageError, match="this instruction beside a snippet needs a model"):  # not plain words
        resolve_edit(original, "# ...\ndef save(p, t):\n", "python", "merge", instruction="Delete load, log saves.")
    with pytest.raises(UsageError, match="the edit is empty"):
        resolve_edit(original, " \n", "python", "auto", run_model)


def test_a_deletion_the_instruction_asks_for_is_validated_as_asked():
    from fastapply.engine import EditRefused, ModelRun, resolve_edit

    original = ("def a():\n    return 1\n\n\ndef b():\n    x = 2\n    y = x\n    z = y\n    return z\n\n\n"
                "def c():\n    return 3\n")
    output = "def a():\n    return 1\n\n\ndef c():\n    return 4\n"
    update = "# ... existing code ...\ndef c():\n    return 4\n"

    def run_model(shown, update, instruction, merged, watch):
        return ModelRun(output, True, {})

    with pytest.raises(EditRefused) as refused:  # the answer is the whole file: the model is shown it whole
        resolve_edit(original, update, "python", "model", run_model, focus=False)
    assert refused.value.reasons == ("unrelated-deletion",)
    outcome = resolve_edit(original, update, "python", "model", run_model, instruction="Remove the function b.")
    assert outcome.engine == "model" and outcome.text == output


def test_a_model_run_is_watched_unless_forced_and_a_run_it_stopped_is_refused_with_its_problem():
    from fastapply.engine import EditRefused, ModelRun, resolve_edit

    loop = "        print(key, config[key])\n" * 3
    given = []

    def run_model(shown, update, instruction, merged, watch):
        # a model that loops: its runner feeds the answer's lines to the watch
        given.append(watch)
        text = SAMPLE_EXPECTED + loop
        if watch is None:
            return ModelRun(text, False, {})
        for i, line in enumerate(text.split("\n")):
            if watch.lines([line]) is not None:
                return ModelRun("\n".join(text.split("\n")[:i + 1]), False, {}, watch.problem)
        raise AssertionError("the watch let a loop through")

    for engine in ("auto", "model"):
        with pytest.raises(EditRefused) as refused:
            resolve_edit(SAMPLE_PY, SAMPLE_UPDATE, "python", engine, run_model, focus=False)  # answers whole files
        assert refused.value.reasons == ("unasked-change",) and "stopped" in str(refused.value)
        assert refused.value.model_run.stopped is given[-1].problem
    forced = resolve_edit(SAMPLE_PY, SAMPLE_UPDATE, "python", "model", run_model, force=True, focus=False)
    assert given[-1] is None and forced.text == SAMPLE_EXPECTED + loop
    assert [p.name for p in forced.problems] == ["truncated", "unasked-change"]
