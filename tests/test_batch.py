"""``fastapply batch``: many edits with one model load or one server; failures reported, the rest go on."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fastapply.batch import apply_item, run_batch
from fastapply.cli import app
from fastapply.engine import ModelRun
from fastapply.errors import UsageError
from fastapply.items import BatchItem, patch_items, read_items
from tests.serving import (  # noqa: F401  (fixtures, used by name)
    EXPECTED, ORIGINAL, UPDATE, _fixed_verify_cost, _private_cache, _session_cache, apply_checkpoint, apply_model)


def test_read_items_keeps_order_and_marks_bad_lines():
    items = read_items('{"file": "a.py", "edit": "x"}\n\nnot json\n{"file": 3, "edit": "y"}\n'
                       '{"file": "b.py", "edit": "z", "instruction": "do it"}\n')
    assert [(i.line, i.file, i.edit, i.instruction, bool(i.problem)) for i in items] == [
        (1, "a.py", "x", "", False), (3, "", "", "", True), (4, "3", "", "", True), (5, "b.py", "z", "do it", False)]
    assert "not JSON" in items[1].problem


def test_apply_item_reports_each_outcome(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(ORIGINAL)
    languages = []

    def echo(original, update, instruction, merged, watch, language):
        languages.append(language)  # the file's, with which the runner's prompt restyles the update's markers
        return ModelRun(update, True, {"passes": 1})

    cut = lambda original, update, instruction, merged, watch, language: ModelRun(update, False, {})  # noqa: E731
    assert apply_item(BatchItem(1, str(path), "new\n"), echo, in_place=False) == {
        "line": 1, "file": str(path), "ok": True, "changed": True, "written": False, "engine": "model", "problems": [],
        "text": "new\n", "stats": {"passes": 1}}
    refused = apply_item(BatchItem(2, str(path), "new\n"), cut, in_place=True)
    assert refused["ok"] is False and refused["exit_code"] == 3 and path.read_text() == ORIGINAL
    assert refused["reasons"] == ["truncated"] and "cut off" in refused["error"]
    missing = apply_item(BatchItem(3, str(tmp_path / "nope.py"), "x"), echo, in_place=True)
    assert missing["ok"] is False and "no such file" in missing["error"] and "reasons" not in missing
    written = apply_item(BatchItem(4, str(path), "new\n"), echo, in_place=True)
    assert written["written"] is True and "text" not in written and path.read_text() == "new\n"
    assert languages == ["python", "python"]


@pytest.mark.parametrize("ends", ["\n", "\r\n"])
def test_an_edit_with_crlf_line_ends_writes_the_file_with_its_own(tmp_path, ends):
    """An agent's JSON (`fastapply batch`, the MCP tool's `code_edit`) may carry CRLF line ends: read as a
    file's are, the edit is merged line for line, and the file keeps its own ends (the edit's CRs went into
    an LF file's merged lines)."""
    path = tmp_path / "a.py"
    original = b"import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n"
    path.write_bytes(original.replace(b"\n", ends.encode()))
    edit = "# ... existing code ...\r\ndef f():\r\n    return 3\r\n# ... existing code ...\r\n"
    record = apply_item(BatchItem(1, str(path), edit), None, in_place=True, engine="merge")
    assert record["ok"] and record["written"], record
    assert path.read_bytes() == original.replace(b"return 1", b"return 3").replace(b"\n", ends.encode())


def test_a_file_another_program_writes_meanwhile_is_left_as_it_wrote_it(tmp_path, monkeypatch):
    """An editor saving a file (another agent writing it) while the model works on it: the edit is not
    written over that change (the record fails, exit 1); with --atomic, a file written while a later item
    is planned fails its item and nothing is written; a file to delete that changed after it was checked
    is kept."""
    monkeypatch.chdir(tmp_path)
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(ORIGINAL)
    second.write_text(ORIGINAL)
    calls = []

    def saves(path, on_call):
        def run(original, update, instruction, merged, watch, language):
            calls.append(path)
            if len(calls) == on_call:
                path.write_text("x = 'saved meanwhile'\n")
            return ModelRun(update, True, {})
        return run

    record = apply_item(BatchItem(1, "a.py", "new\n"), saves(first, 1), in_place=True)
    assert record["ok"] is False and record["exit_code"] == 1 and "changed while fastapply worked" in record["error"]
    assert first.read_text() == "x = 'saved meanwhile'\n"
    first.write_text(ORIGINAL)
    calls.clear()
    items = [BatchItem(1, "a.py", "new\n"), BatchItem(2, "b.py", "other\n")]
    records = list(run_batch(items, saves(first, 2), in_place=True, atomic=True))
    assert [r["ok"] for r in records] == [False, True] and not records[1]["written"]
    assert "changed while fastapply worked" in records[0]["error"]
    assert first.read_text() == "x = 'saved meanwhile'\n" and second.read_text() == ORIGINAL
    calls.clear()
    first.write_text("x = 1\n")
    deletion = "--- a/a.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n"  # a.py as the diff shows it, saved after
    records = list(run_batch(patch_items(deletion) + [BatchItem(9, "b.py", "other\n")], saves(first, 1),
                             in_place=True, atomic=True))
    assert records[0]["ok"] is False and "changed while" in records[0]["error"]
    assert first.read_text() == "x = 'saved meanwhile'\n" and second.read_text() == ORIGINAL  # nothing written
    assert list(run_batch(items, saves(first, 0), in_place=True))[0]["written"]  # none meanwhile: written


def test_apply_item_refuses_left_over_markers_unless_forced(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(ORIGINAL)
    lazy = lambda original, update, instruction, merged, watch, language: ModelRun(update, True, {})  # noqa: E731  (echoes the snippet)
    refused = apply_item(BatchItem(1, str(path), UPDATE), lazy, in_place=True)
    assert refused["ok"] is False and refused["exit_code"] == 3 and "markers-left" in refused["reasons"]
    assert path.read_text() == ORIGINAL
    forced = apply_item(BatchItem(2, str(path), UPDATE), lazy, in_place=True, force=True)
    assert forced["ok"] is True and forced["written"] is True and "markers-left" in forced["problems"]
    assert path.read_text() == UPDATE


def test_concurrent_in_place_edits_of_one_file_are_refused(tmp_path):
    items = [BatchItem(1, str(tmp_path / "a.py"), "x"), BatchItem(2, str(tmp_path / "." / "a.py"), "y")]
    with pytest.raises(UsageError, match="only once"):
        list(run_batch(items, lambda o, u, i: (u, True, {}), in_place=True, workers=2))


def write_batch(tmp_path) -> tuple[str, list]:
    files = [tmp_path / "a.py", tmp_path / "b.py"]
    for path in files:
        path.write_text(ORIGINAL)
    lines = [json.dumps({"file": str(files[0]), "edit": UPDATE}),
             json.dumps({"file": str(tmp_path / "missing.py"), "edit": UPDATE}),
             "{broken",
             json.dumps({"file": str(files[1]), "edit": UPDATE})]
    edits = tmp_path / "edits.jsonl"
    edits.write_text("\n".join(lines) + "\n")
    return str(edits), files


def check_records(records: list[dict]) -> None:
    assert [r["line"] for r in records] == [1, 2, 3, 4]
    assert [r["ok"] for r in records] == [True, False, False, True]
    assert "no such file" in records[1]["error"] and "not JSON" in records[2]["error"]


def test_batch_with_one_local_model_load(apply_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("FASTAPPLY_MODEL", str(apply_checkpoint))
    edits, files = write_batch(tmp_path)
    result = CliRunner().invoke(app, ["batch", edits, "--device", "cpu"])
    assert result.exit_code == 1  # two records failed
    records = [json.loads(line) for line in result.stdout.splitlines()]
    check_records(records)
    assert records[0]["text"] == records[3]["text"] == EXPECTED
    assert [p.read_text() for p in files] == [ORIGINAL, ORIGINAL]  # not --in-place
    assert "2 of 4 edits failed" in result.stderr


def test_batch_through_a_server_in_place(apply_model, tmp_path):
    pytest.importorskip("fastapi")
    from fastapply.server import create_app, running_server

    edits, files = write_batch(tmp_path)
    out = tmp_path / "results.jsonl"
    with running_server(create_app(*apply_model)) as url:
        result = CliRunner().invoke(app, ["batch", edits, "--server", url, "--workers", "3", "--in-place",
                                          "--out", str(out)])
    assert result.exit_code == 1 and result.stdout == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    check_records(records)
    assert records[0]["written"] is records[3]["written"] is True
    assert records[0]["stats"]["accepted_prediction_tokens"] > 0
    assert [p.read_text() for p in files] == [EXPECTED, EXPECTED]


def test_batch_refuses_cut_off_answers_and_reports_why(apply_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("FASTAPPLY_MODEL", str(apply_checkpoint))
    edits, files = write_batch(tmp_path)
    result = CliRunner().invoke(app, ["batch", edits, "--device", "cpu", "--max-new-tokens", "5", "--in-place"])
    assert result.exit_code == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["ok"] for r in records] == [False, False, False, False]
    assert records[0]["exit_code"] == records[3]["exit_code"] == 3
    assert "truncated" in records[0]["reasons"] and "truncated" in records[3]["reasons"]
    assert [p.read_text() for p in files] == [ORIGINAL, ORIGINAL]
    assert "cut off" in result.stderr


def test_batch_through_a_server_refuses_cut_off_answers(apply_model, tmp_path):
    pytest.importorskip("fastapi")
    from fastapply.server import create_app, running_server

    edits, files = write_batch(tmp_path)
    with running_server(create_app(*apply_model)) as url:
        result = CliRunner().invoke(app, ["batch", edits, "--server", url, "--workers", "2", "--in-place",
                                          "--max-new-tokens", "5"])
        forced = CliRunner().invoke(app, ["batch", edits, "--server", url, "--max-new-tokens", "5", "--force"])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and [r["ok"] for r in records] == [False, False, False, False]
    assert "truncated" in records[0]["reasons"] and "truncated" in records[3]["reasons"]
    assert [p.read_text() for p in files] == [ORIGINAL, ORIGINAL]
    kept = [json.loads(line) for line in forced.stdout.splitlines()]
    assert [r["ok"] for r in kept] == [True, False, False, True]
    assert "truncated" in kept[0]["problems"] and kept[0]["text"]
    assert f"<updated-code>\n{EXPECTED}".startswith(kept[0]["text"])  # the cut-off answer, written as it came


def test_batch_merges_for_certain_without_a_model(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    certain = 'def greet(name):\n    return "hello, " + name + "!"\n# ... existing code ...\n'
    files = [tmp_path / "a.py", tmp_path / "b.py"]
    for path in files:
        path.write_text(ORIGINAL)
    edits = tmp_path / "edits.jsonl"
    edits.write_text(json.dumps({"file": str(files[0]), "edit": certain}) + "\n"
                     + json.dumps({"file": str(files[1]), "edit": UPDATE}) + "\n")  # UPDATE anchors nowhere
    result = CliRunner().invoke(app, ["batch", str(edits), "--in-place"])
    assert result.exit_code == 1
    done, refused = [json.loads(line) for line in result.stdout.splitlines()]
    assert done == {"line": 1, "file": str(files[0]), "ok": True, "changed": True, "written": True,
                    "engine": "merge", "problems": [], "stats": None}
    assert refused["ok"] is False and refused["reasons"] == ["uncertain-merge"] and "no model" in refused["error"]
    assert [p.read_text() for p in files] == [EXPECTED, ORIGINAL]
    # --engine merge loads no model even when one is configured
    monkeypatch.setenv("FASTAPPLY_MODEL", str(tmp_path / "no-such-model"))
    files[0].write_text(ORIGINAL)
    merged = CliRunner().invoke(app, ["batch", str(edits), "--engine", "merge"])
    assert [json.loads(line)["ok"] for line in merged.stdout.splitlines()] == [True, False]
    assert json.loads(merged.stdout.splitlines()[0])["text"] == EXPECTED
    needs = CliRunner().invoke(app, ["batch", str(edits), "--engine", "model"], env={"FASTAPPLY_MODEL": ""})
    assert needs.exit_code == 2 and "no model" in needs.stderr


def test_batch_applies_each_files_part_of_a_diff(tmp_path, monkeypatch):
    """`fastapply batch --patch`: a diff of several files (as `git diff` writes it, paths under a/ and b/)
    is one edit a file; a file changed since, its hunk's context stale and not at the line the diff names,
    is refused with no model and the others are written."""
    import difflib

    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    js = "function greet(name) {\n  return 'hello ' + name;\n}\n\nmodule.exports = greet;\n"
    js_new = js.replace("'hello ' + name", "`hello, ${name}!`")
    (tmp_path / "src").mkdir()
    files = {"src/greet.py": (ORIGINAL, EXPECTED), "src/greet.js": (js, js_new), "src/stale.py": (ORIGINAL, EXPECTED)}
    diff = ""
    for name, (old, new) in files.items():
        (tmp_path / name).write_text(old)
        diff += f"diff --git a/{name} b/{name}\nindex 0000000..1111111 100644\n" + "".join(
            difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}"))
    changed = "# Greetings.\n" + ORIGINAL.replace("def greet(name):", "def greet(name):  # a name")  # since the diff
    (tmp_path / "src/stale.py").write_text(changed)
    (tmp_path / "changes.diff").write_text(diff)
    result = CliRunner().invoke(app, ["batch", "--patch", "changes.diff", "--in-place"])
    assert result.exit_code == 1, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["file"], r["ok"]) for r in records] == [("src/greet.py", True), ("src/greet.js", True),
                                                       ("src/stale.py", False)]
    assert records[2]["reasons"] == ["uncertain-merge"]
    assert "hunk 1's context differs from the file in 1 line(s)" in records[2]["error"]  # placed, not certain
    assert [r["line"] for r in records] == [1, 1 + diff.split("diff --git")[1].count("\n"), diff[:diff.rindex(
        "diff --git")].count("\n") + 1]
    assert (tmp_path / "src/greet.py").read_text() == EXPECTED and (tmp_path / "src/greet.js").read_text() == js_new
    # fastapply FILE takes FILE's part of the diff; a file the diff does not name is a usage error
    (tmp_path / "src/greet.py").write_text(ORIGINAL)
    one = CliRunner().invoke(app, [str(tmp_path / "src/greet.py"), "--edit-file", "changes.diff", "--in-place"])
    assert one.exit_code == 0, one.output
    assert (tmp_path / "src/greet.py").read_text() == EXPECTED
    (tmp_path / "other.py").write_text(ORIGINAL)
    other = CliRunner().invoke(app, ["other.py", "--edit-file", "changes.diff"])
    assert other.exit_code == 2 and "fastapply batch --patch" in other.stderr


def _needs(tool: str) -> None:
    """Skips a test that runs ``tool`` (git, diff) where it is not installed."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")


def _repository(root, files: dict | None = None) -> None:
    """``root`` made a git repository whose one commit, "before", holds every file in it (``files``, path ->
    text, written first)."""
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "before")


def _linked_work(tmp_path, monkeypatch):
    """A folder inside ``tmp_path`` (so that a link may point out of it) made the current one, holding
    ``calc.py``; no default model (the merge engine alone)."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "calc.py").write_text("x = 1\n")
    return work


def _git(repo, *args, text=True):
    """git's output (``text``: decoded, its line ends made LF; else its bytes)."""
    import subprocess

    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                          capture_output=True, text=text).stdout


def _tree(root) -> dict:
    """Every file under ``root`` but git's own: its text and whether it is executable (a symbolic link:
    ``-> target``)."""
    import os

    return {str(p.relative_to(root)): (f"-> {os.readlink(p)}", False) if p.is_symlink() else
            (p.read_bytes().decode("latin-1"), os.access(p, os.X_OK))
            for p in sorted(root.rglob("*")) if (p.is_file() or p.is_symlink()) and ".git" not in p.parts}


def test_batch_patch_creates_deletes_and_moves_files_as_git_diff_says(tmp_path, monkeypatch):
    """`git diff` of a commit that adds a file (executable), an empty one, deletes one, renames one as it
    is and one with an edit, and makes a script executable: `fastapply batch --patch -i` with no model
    leaves the tree the commit left; without -i nothing is touched and the records say what would be done."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(8))
    files = {"calc.py": body, "gone.txt": "old\nnotes\n", "plain.txt": "kept as it is\n", "lib/util.py": body,
             "run.sh": "echo hi\n"}
    for name, text in files.items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(text)
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\xff\x01")
    (repo / "old.png").write_bytes(b"\x89PNG\x00\xfe")
    _repository(repo)
    (repo / "bin").mkdir()
    (repo / "bin/tool").write_text("#!/bin/sh\necho tool\n")
    (repo / "bin/tool").chmod(0o755)
    (repo / "empty.txt").write_text("")
    (repo / "gone.txt").unlink()
    (repo / "docs").mkdir()
    (repo / "plain.txt").rename(repo / "docs/plain.txt")
    (repo / "lib/util.py").rename(repo / "lib/helpers.py")
    (repo / "lib/helpers.py").write_text(body.replace("x + 3", "x * 3"))
    (repo / "run.sh").chmod(0o755)
    (repo / "img").mkdir()
    (repo / "img/café menu.txt").write_text("crème\n")  # git quotes its name: "b/img/caf\303\251 menu.txt"
    (repo / "logo.png").rename(repo / "img/logo.png")  # a binary file moved as it is, and one deleted
    (repo / "old.png").unlink()
    (repo / "calc.py").write_text(body.replace("x + 5", "x - 5").rstrip("\n"))  # "\ No newline at end of file"
    _git(repo, "add", "-A")
    diff = _git(repo, "diff", "--cached", "-M")
    assert "rename from lib/util.py" in diff and "new mode 100755" in diff and "new file mode 100755" in diff
    assert '+++ "b/img/caf\\303\\251 menu.txt"' in diff
    after = _tree(repo)
    _git(repo, "commit", "-qm", "after")
    _git(repo, "reset", "-q", "--hard", "HEAD~1")
    before = _tree(repo)
    (tmp_path / "change.diff").write_text(diff)

    dry = CliRunner().invoke(app, ["batch", "--patch", str(tmp_path / "change.diff")])
    assert dry.exit_code == 0, dry.output
    records = {r["file"]: r for r in map(json.loads, dry.stdout.splitlines())}
    assert _tree(repo) == before
    assert records["bin/tool"]["created"] and records["bin/tool"]["text"] == "#!/bin/sh\necho tool\n"
    assert records["gone.txt"]["deleted"] and records["gone.txt"]["text"] is None
    assert records["lib/helpers.py"]["moved_from"] == "lib/util.py"
    assert records["docs/plain.txt"]["moved_from"] == "plain.txt"
    assert records["img/logo.png"]["moved_from"] == "logo.png" and records["old.png"]["deleted"]
    assert all(r["ok"] and r["changed"] and not r["written"] for r in records.values())

    done = CliRunner().invoke(app, ["batch", "--patch", str(tmp_path / "change.diff"), "--in-place"])
    assert done.exit_code == 0, done.output
    assert _tree(repo) == after
    # again: every file the diff creates or moves to is there now, every file it deletes or moves is not
    again = CliRunner().invoke(app, ["batch", "--patch", str(tmp_path / "change.diff"), "--in-place"])
    failed = {r["file"]: r["error"] for r in map(json.loads, again.stdout.splitlines()) if not r["ok"]}
    assert again.exit_code == 1 and _tree(repo) == after
    assert "cannot create bin/tool: it exists" in failed["bin/tool"]
    assert "cannot move lib/util.py to lib/helpers.py: it exists" in failed["lib/helpers.py"]
    assert "no such file" in failed["gone.txt"]
    # a file changed since the diff that deletes it is not deleted, binary or not (git's object id tells)
    _git(repo, "reset", "-q", "--hard")
    _git(repo, "clean", "-qfd")
    (repo / "old.png").write_bytes(b"\x89PNG\x00\xfd")
    (repo / "gone.txt").write_text("old\nnotes, edited\n")
    stale = CliRunner().invoke(app, ["batch", "--patch", str(tmp_path / "change.diff"), "--in-place"])
    refused = {r["file"]: r.get("reasons") for r in map(json.loads, stale.stdout.splitlines()) if not r["ok"]}
    assert refused == {"old.png": ["stale-deletion"], "gone.txt": ["stale-deletion"]}
    assert (repo / "old.png").exists() and (repo / "gone.txt").exists()


def test_batch_patch_deletes_only_the_file_it_shows_and_only_here(tmp_path, monkeypatch):
    """A file changed since the diff that deletes it is refused, not deleted; a path outside the current
    directory is not created, deleted, moved or edited; `*** Begin Patch` creates, moves and deletes."""
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "notes.txt").write_text("one\ntwo, edited since\n")
    (tmp_path / "outside.txt").write_text("keep me\n")
    diff = ("--- a/notes.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
            "--- a/../outside.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-keep me\n"
            "--- /dev/null\n+++ b//tmp/fastapply-outside.txt\n@@ -0,0 +1 @@\n+x\n"
            "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-keep me\n+changed\n")  # an edit too
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--engine", "merge"], input=diff)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and not any(r["ok"] for r in records)
    assert records[0]["reasons"] == ["stale-deletion"] and "has changed since" in records[0]["error"]
    assert all("outside the current directory" in record["error"] for record in records[1:])
    assert (work / "notes.txt").exists() and (tmp_path / "outside.txt").read_text() == "keep me\n"
    assert not Path("/tmp/fastapply-outside.txt").exists()

    (work / "app.py").write_text("def greet():\n    print('Hi')\n")
    agent = ("*** Begin Patch\n*** Add File: docs/hello.txt\n+Hello\n*** Update File: app.py\n"
             "*** Move to: src/main.py\n@@ def greet():\n-    print('Hi')\n+    print('Hello')\n"
             "*** Delete File: notes.txt\n*** End Patch\n")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=agent)
    assert result.exit_code == 0, result.output
    assert _tree(work) == {"docs/hello.txt": ("Hello\n", False), "src/main.py": ("def greet():\n    print('Hello')\n",
                                                                                 False)}


def test_batch_answer_creates_a_file_it_shows_whole(tmp_path, monkeypatch):
    """A chat answer's block for a file that is not there creates it where the block is the whole file;
    one with a lazy marker (a part of a file the answer takes to be there) is not created."""
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "greet.py").write_text(ORIGINAL)
    answer = ("Add a helper module:\n\n```python:util/shout.py\ndef shout(text):\n    return text.upper()\n```\n\n"
              "Then in `greet.py`:\n\n```python:greet.py\ndef greet(name):\n    return shout(\"hello \" + name)\n"
              "# ... existing code ...\n```\n\nand `util/more.py`:\n\n```python:util/more.py\n# ... existing code ...\n"
              "def more():\n    pass\n```\n")
    result = CliRunner().invoke(app, ["batch", "--answer", "-", "--in-place"], input=answer)
    records = {r["file"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert result.exit_code == 1 and records["util/shout.py"]["created"] and records["greet.py"]["ok"]
    assert (tmp_path / "util/shout.py").read_text() == "def shout(text):\n    return text.upper()\n"
    assert 'shout("hello " + name)' in (tmp_path / "greet.py").read_text()
    assert "no such file" in records["util/more.py"]["error"] and not (tmp_path / "util/more.py").exists()


def test_fastapply_file_creates_the_file_a_diff_creates(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    creation = ("--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+def h():\n+    return 1\n"
                "\\ No newline at end of file\n")
    printed = CliRunner().invoke(app, ["pkg/new.py", "--edit", creation])
    assert printed.exit_code == 0 and printed.stdout == "def h():\n    return 1" and not (tmp_path / "pkg").exists()
    written = CliRunner().invoke(app, ["pkg/new.py", "--edit", creation, "--in-place"])
    assert written.exit_code == 0, written.output
    assert (tmp_path / "pkg/new.py").read_text() == "def h():\n    return 1"
    (tmp_path / "e.py").write_text("x = 1\n")
    unended = "--- a/e.py\n+++ b/e.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n\\ No newline at end of file\n"
    assert CliRunner().invoke(app, ["e.py", "--edit", unended, "--in-place"]).exit_code == 0
    assert (tmp_path / "e.py").read_text() == "x = 2"  # as the diff says, not as the file was
    missing = CliRunner().invoke(app, ["other.py", "--edit", "x = 1\n"])
    assert missing.exit_code == 1 and "cannot read other.py: no such file" in missing.stderr
    (tmp_path / "c.diff").write_bytes(b"--- /dev/null\n+++ b/run.bat\n@@ -0,0 +1,2 @@\n+@echo off\r\n+echo hi\r\n")
    made = CliRunner().invoke(app, ["run.bat", "--edit-file", "c.diff", "--in-place"])
    assert made.exit_code == 0 and (tmp_path / "run.bat").read_bytes() == b"@echo off\r\necho hi\r\n"  # its CRLF
    given = CliRunner().invoke(app, ["two.bat", "--edit", "--- /dev/null\n+++ b/two.bat\n@@ -0,0 +1,2 @@\n+a\r\n+b\r",
                                     "--in-place"])  # as a shell's $(...) gives it: the last line's LF taken off
    assert given.exit_code == 0 and (tmp_path / "two.bat").read_bytes() == b"a\r\nb\r\n"
    piped = CliRunner().invoke(app, ["three.bat", "--edit", "-", "--in-place"],
                               input=b"--- /dev/null\n+++ b/three.bat\n@@ -0,0 +1,2 @@\n+c\r\n+d\r\n")
    assert piped.exit_code == 0 and (tmp_path / "three.bat").read_bytes() == b"c\r\nd\r\n"  # stdin's CRLF too


def test_batch_patch_reads_the_mail_git_format_patch_writes(tmp_path, monkeypatch):
    """`git format-patch` writes a commit as a mail: its header and message before the diff, a signature
    (`-- ` and git's version) after it, which a hunk must not take for a deleted line; each record's line
    is the input's. `fastapply FILE` reads such a mail of one file too."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    _repository(tmp_path, {"greet.py": ORIGINAL})
    (tmp_path / "greet.py").write_text(EXPECTED)
    (tmp_path / "shout.py").write_text("def shout(text):\n    return text.upper()\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "Greet louder\n\n--- a note in the message, not a file")
    mail = _git(tmp_path, "format-patch", "-1", "--stdout")
    assert mail.startswith("From ") and "\n-- \n" in mail
    _git(tmp_path, "reset", "-q", "--hard", "HEAD~1")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=mail)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["file"], mail.split("\n")[r["line"] - 1]) for r in records] == [
        ("greet.py", "diff --git a/greet.py b/greet.py"), ("shout.py", "diff --git a/shout.py b/shout.py")]
    assert (tmp_path / "greet.py").read_text() == EXPECTED and records[1]["created"]
    assert (tmp_path / "shout.py").read_text() == "def shout(text):\n    return text.upper()\n"
    one = mail[:mail.index("diff --git a/shout.py")] + mail[mail.index("\n-- \n") + 1:]  # the mail of greet.py alone
    (tmp_path / "greet.py").write_text(ORIGINAL)
    single = CliRunner().invoke(app, ["greet.py", "--edit", one, "--engine", "merge"])
    assert single.exit_code == 0 and single.stdout == EXPECTED
    # the mails of two commits, one after the other: each commit's parts, in order
    _git(tmp_path, "checkout", "-q", "-f", "HEAD@{1}")
    (tmp_path / "greet.py").write_text(EXPECTED.replace('print(greet("git"))', 'print(greet("mail"))'))
    (tmp_path / "shout.py").unlink()
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "Greet the mail")
    after = _tree(tmp_path)
    mails = _git(tmp_path, "format-patch", "-2", "--stdout")
    _git(tmp_path, "reset", "-q", "--hard", "HEAD~2")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=mails)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["file"] for line in result.stdout.splitlines()] == ["greet.py", "shout.py", "greet.py",
                                                                                "shout.py"]
    assert _tree(tmp_path) == after


def test_batch_patch_reads_git_log_p_and_git_show(tmp_path, monkeypatch):
    """`git log -p --reverse A..B` is a series, applied commit by commit (`--atomic` too), each commit's
    header and message (its lines indented as a hunk's context is) kept out of the hunk before (without
    `--reverse`, newest first, a usage error where git's ids show it); `git show`
    of one commit is its diff for `fastapply FILE`; `-R` undoes the series; `git show` of a merge (a
    combined diff, `diff --cc`) is refused, saying what to give instead."""
    import subprocess

    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    _repository(tmp_path, {"greet.py": ORIGINAL})
    (tmp_path / "greet.py").write_text(EXPECTED)
    _git(tmp_path, "commit", "-qam", "Greet louder\n\n a message line that reads as context")
    (tmp_path / "greet.py").write_text(EXPECTED.replace('print(greet("git"))', 'print(greet("log"))'))
    (tmp_path / "shout.py").write_text("def shout(text):\n    return text.upper()\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "Greet the log")
    after = _tree(tmp_path)
    log = _git(tmp_path, "log", "-p", "--reverse", "--decorate", "HEAD~2..HEAD")
    newest = _git(tmp_path, "log", "-p", "HEAD~2..HEAD")  # newest first: greet.py's ids say so
    show = _git(tmp_path, "show", "HEAD~1")
    assert log.startswith("commit ") and show.startswith("commit ")
    _git(tmp_path, "reset", "-q", "--hard", "HEAD~2")
    before = _tree(tmp_path)
    single = CliRunner().invoke(app, ["greet.py", "--edit", show, "--engine", "merge"])
    assert single.exit_code == 0 and single.stdout == EXPECTED
    turned = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=newest)
    assert turned.exit_code == 2 and "newest first" in turned.stderr and "--reverse" in turned.stderr
    assert _tree(tmp_path) == before
    for flags in ([], ["--atomic"]):
        result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", *flags], input=log)
        assert result.exit_code == 0, result.output
        assert [json.loads(line)["file"] for line in result.stdout.splitlines()] == ["greet.py", "greet.py", "shout.py"]
        assert _tree(tmp_path) == after
        undone = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "-R"], input=log)
        assert undone.exit_code == 0, undone.output
        assert _tree(tmp_path) == before
    for branch, line in (("side", "# side\n"), ("main", "# main\n")):  # the same line changed on two branches
        _git(tmp_path, "checkout", "-q", "-b" if branch == "side" else "-", *(["side"] if branch == "side" else []))
        (tmp_path / "greet.py").write_text(line + ORIGINAL)
        _git(tmp_path, "commit", "-qam", branch)
    subprocess.run(["git", "merge", "-q", "side"], cwd=tmp_path, capture_output=True)  # a conflict, resolved:
    (tmp_path / "greet.py").write_text("# both\n" + ORIGINAL)
    _git(tmp_path, "commit", "-qam", "merge")
    merge = _git(tmp_path, "show", "HEAD")
    assert "diff --cc greet.py" in merge and "@@@ " in merge
    _git(tmp_path, "checkout", "-q", "HEAD~1")
    refused = CliRunner().invoke(app, ["batch", "--patch", "-"], input=merge)
    assert refused.exit_code == 1 and "a merge commit's combined diff" in refused.stdout
    alone = CliRunner().invoke(app, ["greet.py", "--edit", merge, "--engine", "merge"])
    assert alone.exit_code == 2 and "git diff MERGE^ MERGE" in alone.stderr


def test_batch_patch_never_reads_a_files_part_as_a_snippet(tmp_path, monkeypatch):
    """A part that cannot be read as a diff of its file (here a file holding hunk headers of its own, whose
    edits may be its own text, and no git index line naming it) is a usage error, not a snippet to merge;
    a created file's part that is no diff (cut short) is not written."""
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    notes = "# Diffs\n\n```diff\n@@ -1 +1 @@\n-a = 1\n+a = 2\n```\n\nThat is all.\n"
    (tmp_path / "notes.md").write_text(notes)
    agent = ("*** Begin Patch\n*** Update File: notes.md\n@@\n-That is all.\n+That is all there is.\n"
             "*** End Patch\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\nnot a diff's line\n")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=agent)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and [(r["file"], r["ok"], r["exit_code"]) for r in records] == [
        ("notes.md", False, 2), ("new.py", False, 2)]
    assert all("cannot read the diff's part" in r["error"] for r in records)
    assert (tmp_path / "notes.md").read_text() == notes and not (tmp_path / "new.py").exists()


def test_batch_atomic_writes_nothing_unless_every_edit_succeeds(tmp_path, monkeypatch):
    """`--atomic`: every edit is decided before any is written; one refused (a stale deletion here) and
    no file is created, moved, edited or deleted; all succeeding, all are done."""
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "greet.py").write_text(ORIGINAL)
    (tmp_path / "old.txt").write_text("old, edited since\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    patch = ("*** Begin Patch\n*** Add File: new.txt\n+new\n*** Update File: app.py\n*** Move to: src/app.py\n@@\n"
             "-x = 1\n+x = 2\n*** End Patch\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
             "--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n"
             "-    return \"hello \" + name\n+    return \"hello, \" + name + \"!\"\n")
    before = _tree(tmp_path)
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--atomic"], input=patch)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and "nothing was written (--atomic)" in result.stderr
    assert [(r["file"], r["ok"], r.get("written")) for r in records] == [
        ("new.txt", True, False), ("src/app.py", True, False), ("old.txt", False, None), ("greet.py", True, False)]
    assert _tree(tmp_path) == before
    (tmp_path / "old.txt").write_text("old\n")
    done = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--atomic"], input=patch)
    assert done.exit_code == 0, done.output
    assert _tree(tmp_path) == {"greet.py": (EXPECTED, False), "new.txt": ("new\n", False),
                               "src/app.py": ("x = 2\n", False)}
    twice = CliRunner().invoke(app, ["batch", "-", "--in-place", "--atomic"],
                               input='{"file": "greet.py", "edit": "x"}\n{"file": "greet.py", "edit": "y"}\n')
    assert twice.exit_code == 2 and "each file may appear only once" in twice.stderr
    moved = ("diff --git a/gone.txt b/kept.txt\nsimilarity index 100%\nrename from gone.txt\nrename to kept.txt\n"
             "--- /dev/null\n+++ b/more.txt\n@@ -0,0 +1 @@\n+more\n")  # a file moved that is not there
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--atomic"], input=moved)
    assert result.exit_code == 1 and "cannot move gone.txt: no such file" in result.stdout
    assert not (tmp_path / "more.txt").exists()


def test_batch_loads_the_default_model_only_when_an_edit_needs_it(tmp_path, monkeypatch):
    """With fastapply-small (certain merges first), a batch whose edits are all certain loads no model:
    a git diff applies in a second, not after a model load; a model that cannot be loaded is then the
    error of each edit that needs it, tried once. Another model is loaded before the first edit."""
    import fastapply.loading as loading
    from fastapply import bundled
    from fastapply.batch import local_runner
    from fastapply.errors import FastapplyError

    calls = []

    def cannot(*args, **kwargs):
        calls.append(args)
        raise FastapplyError("cannot load the model")

    monkeypatch.setattr(loading, "load_model", cannot)
    monkeypatch.setattr(bundled, "available", lambda: True)  # the default model, here one that cannot load
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "greet.py").write_text(ORIGINAL)
    (tmp_path / "other.py").write_text(ORIGINAL)
    certain = ("--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n"
               "-    return \"hello \" + name\n+    return \"hello, \" + name + \"!\"\n")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=certain)
    assert result.exit_code == 0 and calls == [] and (tmp_path / "greet.py").read_text() == EXPECTED
    uncertain = '{"file": "other.py", "edit": %s}\n' % json.dumps(UPDATE)  # anchors nowhere: the model's
    result = CliRunner().invoke(app, ["batch", "-"], input=uncertain * 2)
    assert result.exit_code == 1 and len(calls) == 1, result.output
    assert [json.loads(line)["error"] for line in result.stdout.splitlines()] == ["cannot load the model"] * 2
    with pytest.raises(FastapplyError, match="cannot load"):
        local_runner(str(tmp_path / "a-model"))  # not lazy: loaded at once


def test_batch_patch_applies_the_binary_patches_git_writes(tmp_path, monkeypatch):
    """`git diff --binary` (and `git format-patch`, binary by default) of a commit that changes a large
    binary file a little (a delta), rewrites a small one (a literal), creates one and renames one with a
    change: `batch --patch -i` leaves the commit's tree. A binary file changed since is refused, untouched;
    a diff without the data (`Binary files ... differ`) is a usage error naming --binary."""
    import random
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    noise = random.Random(7)
    photo = bytes(noise.randrange(256) for _ in range(20000))
    (tmp_path / "photo.jpg").write_bytes(photo)
    (tmp_path / "icon.ico").write_bytes(b"\x00\x00\x01\x00")
    (tmp_path / "font.ttf").write_bytes(photo[:4000])
    (tmp_path / "notes.txt").write_text("binary files beside text\n")
    _repository(tmp_path)
    before = _tree(tmp_path)
    (tmp_path / "photo.jpg").write_bytes(photo[:9000] + b"\xff\xd8edited" + photo[9008:])
    (tmp_path / "icon.ico").write_bytes(b"\x00\x00\x01\x00\x02\xff\x00")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets/new.bin").write_bytes(bytes(range(256)))
    (tmp_path / "font.ttf").rename(tmp_path / "assets/font.ttf")
    (tmp_path / "assets/font.ttf").write_bytes(photo[:3900] + b"\x00" * 100)
    (tmp_path / "notes.txt").write_text("binary files beside text, edited\n")
    _git(tmp_path, "add", "-A")
    diff = _git(tmp_path, "diff", "--cached", "-M", "--binary")
    assert "\ndelta " in diff and "\nliteral " in diff and "rename from font.ttf" in diff
    _git(tmp_path, "commit", "-qm", "after")
    after = _tree(tmp_path)
    mail = _git(tmp_path, "format-patch", "-1", "--stdout")
    assert "GIT binary patch" in mail
    for given in (diff, mail):
        _git(tmp_path, "reset", "-q", "--hard", "HEAD~1")
        result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=given)
        assert result.exit_code == 0, result.output
        records = {r["file"]: r for r in map(json.loads, result.stdout.splitlines())}
        assert _tree(tmp_path) == after
        assert records["assets/new.bin"]["created"] and records["assets/font.ttf"]["moved_from"] == "font.ttf"
        assert records["photo.jpg"]["binary"] and "binary" not in records["notes.txt"]
        _git(tmp_path, "checkout", "-q", "-f", "HEAD@{1}")
    _git(tmp_path, "reset", "-q", "--hard", "HEAD~1")
    dry = CliRunner().invoke(app, ["batch", "--patch", "-"], input=diff)
    records = {r["file"]: r for r in map(json.loads, dry.stdout.splitlines())}
    assert dry.exit_code == 0 and _tree(tmp_path) == before
    assert records["icon.ico"] == {"line": records["icon.ico"]["line"], "file": "icon.ico", "ok": True, "changed": True,
                                   "written": False, "engine": "merge", "problems": [], "text": None, "stats": None,
                                   "binary": True}
    (tmp_path / "photo.jpg").write_bytes(photo[:-1] + b"!")
    stale = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diff)
    refused = {r["file"]: r.get("reasons") for r in map(json.loads, stale.stdout.splitlines()) if not r["ok"]}
    assert stale.exit_code == 1 and refused == {"photo.jpg": ["stale-binary"]}
    assert (tmp_path / "photo.jpg").read_bytes() == photo[:-1] + b"!"
    _git(tmp_path, "reset", "-q", "--hard")
    plain = CliRunner().invoke(app, ["batch", "--patch", "-"], input=_git(tmp_path, "diff", "HEAD", "HEAD@{1}"))
    errors = {r["file"]: r.get("error", "") for r in map(json.loads, plain.stdout.splitlines())}
    assert plain.exit_code == 1 and "git diff --binary" in errors["photo.jpg"] and errors["notes.txt"] == ""
    single = CliRunner().invoke(app, ["photo.jpg", "--edit", diff])  # FILE's part of the diff, binary: not text
    assert single.exit_code == 2 and "binary patch of photo.jpg" in single.stderr and "batch --patch" in single.stderr


def test_batch_patch_creates_files_with_the_line_ends_their_lines_have(tmp_path, monkeypatch):
    """git's diff of a commit creating a CRLF file, a file whose one line ends in a lone CR and a file of
    mixed ends: each created byte for byte (the diff's CRs are its lines' own, as `git apply` takes them);
    an edited CRLF file keeps its ends; `*** Add File:` lines that end in CRLF make a CRLF file."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old.bat").write_bytes(b"@echo off\r\necho old\r\n")
    _repository(tmp_path)
    made = {"run.bat": b"@echo off\r\necho hi\r\n", "lone.txt": b"x\r", "mixed.txt": b"p\nq\r\nr"}
    for name, data in made.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "old.bat").write_bytes(b"@echo off\r\necho new\r\n")
    _git(tmp_path, "add", "-A")
    diff = _git(tmp_path, "diff", "--cached", text=False)
    assert b"+echo hi\r\n" in diff and b"+x\r\n\\ No newline" in diff
    _git(tmp_path, "reset", "-q", "--hard")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diff)
    assert result.exit_code == 0, result.output
    assert {name: (tmp_path / name).read_bytes() for name in made} == made
    assert (tmp_path / "old.bat").read_bytes() == b"@echo off\r\necho new\r\n"
    agent = b"*** Begin Patch\r\n*** Add File: docs/a.txt\r\n+one\r\n+two\r\n*** End Patch\r\n"
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=agent)
    assert result.exit_code == 0 and (tmp_path / "docs/a.txt").read_bytes() == b"one\r\ntwo\r\n"



def test_batch_patch_applies_diff_ru_of_two_folders(tmp_path, monkeypatch):
    """`diff -ruN old new` applied inside a copy of old leaves new (each side's folder dropped from the
    paths); without -N the files on one side only are records that failed, naming diff -N; `-p 0` keeps
    the folders; `fastapply FILE` takes one file's `diff -u` with its command line."""
    import subprocess

    _needs("diff")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    old, new, work = tmp_path / "old", tmp_path / "new", tmp_path / "work"
    for root, files in ((old, {"calc.py": "x = 1\ny = 2\n", "sub/gone.txt": "bye\n"}),
                        (new, {"calc.py": "x = 1\ny = 3\n", "sub/added.txt": "hi\n"})):
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    diffs = {flags: subprocess.run(["diff", flags, "old", "new"], cwd=tmp_path, capture_output=True, text=True).stdout
             for flags in ("-ruN", "-ru")}
    assert "diff -ruN old/calc.py new/calc.py" in diffs["-ruN"] and "Only in new/sub: added.txt" in diffs["-ru"]
    shutil.copytree(old, work)
    monkeypatch.chdir(work)
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diffs["-ruN"])
    assert result.exit_code == 0, result.output
    assert _tree(work) == _tree(new)
    shutil.rmtree(work)
    shutil.copytree(old, work)
    monkeypatch.chdir(work)  # the folder made again
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diffs["-ru"])
    records = {r["file"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert result.exit_code == 1 and records["calc.py"]["ok"] and (work / "calc.py").read_text() == "x = 1\ny = 3\n"
    assert "Only in new/sub: added.txt" in records["sub/added.txt"]["error"]
    assert "diff -N" in records["sub/gone.txt"]["error"]
    kept = CliRunner().invoke(app, ["batch", "--patch", "-", "-p", "0"], input=diffs["-ruN"])
    assert "cannot read new/calc.py: no such file" in kept.stdout
    assert CliRunner().invoke(app, ["batch", "-", "-p", "1"], input="").exit_code == 2
    (work / "calc.py").write_text("x = 1\ny = 2\n")
    one = diffs["-ruN"][diffs["-ruN"].index("diff -ruN old/calc.py"):diffs["-ruN"].index("diff -ruN old/sub")]
    single = CliRunner().invoke(app, ["calc.py", "--edit", one])
    assert single.exit_code == 0 and single.stdout == "x = 1\ny = 3\n"


def test_batch_patch_makes_points_and_deletes_symbolic_links(tmp_path, monkeypatch):
    """git's diff of a commit that makes a symbolic link (one pointing out of the folder too: a link may
    point anywhere), points another elsewhere and deletes a third: `batch --patch -i` leaves the commit's
    tree, links as links (`--atomic` too, and `-R` undoes it); a link not as the diff shows it is refused
    (`stale-link`), and a part beyond a link the diff makes is not written through it."""
    work = _linked_work(tmp_path, monkeypatch)
    (work / "docs").mkdir()
    (work / "docs" / "guide.md").write_text("# guide\n")
    (work / "latest").symlink_to("calc.py")
    (work / "gone").symlink_to("docs")
    _repository(work)
    before = _tree(work)
    (work / "latest").unlink()
    (work / "latest").symlink_to("docs/guide.md")
    (work / "gone").unlink()
    (work / "made").symlink_to("calc.py")
    (work / "outside").symlink_to("../elsewhere")
    (work / "new" / "folder").mkdir(parents=True)
    (work / "new" / "folder" / "up").symlink_to("../../calc.py")  # a link in a folder the diff makes
    (work / "calc.py").write_text("x = 2\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "links")
    after = _tree(work)
    diff = _git(work, "diff", "HEAD~1", "HEAD")
    assert diff.count("120000") >= 4
    _git(work, "checkout", "-q", "HEAD~1")
    assert _tree(work) == before
    for flags in ([], ["--atomic"]):
        result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", *flags], input=diff)
        assert result.exit_code == 0, result.output
        records = {r["file"]: r for r in map(json.loads, result.stdout.splitlines())}
        assert records["made"]["link"] and records["made"]["created"] and records["gone"]["deleted"]
        assert _tree(work) == after and (work / "outside").is_symlink()
        undone = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "-R", *flags], input=diff)
        assert undone.exit_code == 0, undone.output
        assert _tree(work) == before
    (work / "latest").unlink()
    (work / "latest").symlink_to("calc.py.bak")  # pointed elsewhere since the diff was made
    stale = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--atomic"], input=diff)
    records = {r["file"]: r for r in map(json.loads, stale.stdout.splitlines())}
    assert stale.exit_code == 1 and records["latest"]["reasons"] == ["stale-link"]
    assert os.readlink(work / "latest") == "calc.py.bak" and not (work / "made").exists()
    beyond = ("diff --git a/out b/out\nnew file mode 120000\n--- /dev/null\n+++ b/out\n@@ -0,0 +1 @@\n+..\n"
              "\\ No newline at end of file\ndiff --git a/out/x.txt b/out/x.txt\nnew file mode 100644\n--- /dev/null\n"
              "+++ b/out/x.txt\n@@ -0,0 +1 @@\n+escaped\n")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=beyond)
    records = {r["file"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert result.exit_code == 1 and "beyond the symbolic link out" in records["out/x.txt"]["error"]
    assert not (tmp_path / "x.txt").exists() and os.readlink(work / "out") == ".."
    alone = CliRunner().invoke(app, ["made", "--edit", diff[diff.index("diff --git a/made"):], "--in-place"])
    assert alone.exit_code == 2 and "symbolic link" in alone.stderr  # fastapply FILE writes no link as a file


def test_batch_patch_moves_links_and_follows_them_through_a_series(tmp_path, monkeypatch):
    """A link renamed (git writes no mode for a rename with no hunks: the path is a link) is moved as a
    link, a dangling one and one pointing out of the folder too, its target untouched; `git diff -C`'s
    copy of a link is a link; a link made in one commit of a series and pointed elsewhere in the next
    applies with `--atomic` (each commit sees the links the ones before it make: a copy of one is a link,
    one is moved to a path a file left in the commit before); a link renamed and pointed anew (mode 120000
    and a hunk) is moved with its new target."""
    work = _linked_work(tmp_path, monkeypatch)
    (work / "dangling").symlink_to("missing")
    (work / "away").symlink_to("../elsewhere")
    (work / "tool").symlink_to("calc.py")
    _repository(work)
    (work / "bin").mkdir()
    for name in ("dangling", "away"):
        (work / name).rename(work / "bin" / name)
    (work / "tool2").symlink_to("calc.py")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "moved")
    (work / "new").symlink_to("calc.py")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "made")
    (work / "new").unlink()
    (work / "new").symlink_to("bin")
    (work / "calc.py").rename(work / "kept.py")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "pointed, calc.py moved away")
    (work / "new").rename(work / "calc.py")  # a link moved to the path the commit before freed
    (work / "copy").symlink_to("bin")  # a copy of the link the series made
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "taken")
    after = _tree(work)
    moved = _git(work, "diff", "-M", "-C", "--find-copies-harder", "HEAD~4", "HEAD~3")
    assert "rename from dangling" in moved and "copy from tool" in moved
    series = _git(work, "format-patch", "--stdout", "-M", "-C", "--find-copies-harder", "HEAD~4..HEAD")
    assert "rename from new" in series and "copy from new" in series  # git pairs the two as it likes
    _git(work, "checkout", "-q", "HEAD~4")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=moved)
    assert result.exit_code == 0, result.output
    assert os.readlink(work / "bin" / "dangling") == "missing" and os.readlink(work / "bin" / "away") == "../elsewhere"
    assert os.readlink(work / "tool2") == "calc.py" and (work / "calc.py").read_text() == "x = 1\n"
    _git(work, "checkout", "-q", "-f", ".")
    _git(work, "clean", "-qfd")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--atomic"], input=series)
    assert result.exit_code == 0, result.output
    assert _tree(work) == after
    retarget = ("diff --git a/tool b/sub/tool\nsimilarity index 80%\nrename from tool\nrename to sub/tool\n"
                "index 8ce4f79..1234567 120000\n--- a/tool\n+++ b/sub/tool\n@@ -1 +1 @@\n-calc.py\n"
                "\\ No newline at end of file\n+../calc.py\n\\ No newline at end of file\n")  # moved and pointed anew
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=retarget)
    assert result.exit_code == 0, result.output
    assert not os.path.lexists(work / "tool") and os.readlink(work / "sub" / "tool") == "../calc.py"


def test_batch_patch_applies_context_diffs(tmp_path, monkeypatch):
    """`diff -rcN old new` (context diffs) applied inside a copy of old leaves new, records naming the
    lines of the input their parts start on; `-R` undoes it; `fastapply FILE` takes one file's `diff -c`."""
    import subprocess

    _needs("diff")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    old, new, work = tmp_path / "old", tmp_path / "new", tmp_path / "work"
    body = "".join(f"line {k}\n" for k in range(20))
    for root, files in ((old, {"notes.txt": body + "x = 1\ny = 2", "sub/gone.txt": "bye\n"}),
                        (new, {"notes.txt": body.replace("line 3\n", "").replace("line 9", "line nine") + "x = 1\ny = 3",
                               "sub/added.txt": "hi\n"})):
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    diff = subprocess.run(["diff", "-rcN", "old", "new"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "***************" in diff and "! y = 3" in diff and "\\ No newline" in diff
    shutil.copytree(old, work)
    monkeypatch.chdir(work)
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diff)
    assert result.exit_code == 0, result.output
    assert _tree(work) == _tree(new)
    lines = diff.split("\n")
    assert {r["file"]: lines[r["line"] - 1].split()[-1] for r in map(json.loads, result.stdout.splitlines())} == {
        "notes.txt": "new/notes.txt", "sub/added.txt": "new/sub/added.txt", "sub/gone.txt": "new/sub/gone.txt"}
    undone = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "-R"], input=diff)
    assert undone.exit_code == 0, undone.output
    assert _tree(work) == _tree(old)
    one = diff[diff.index("diff -rcN old/notes.txt"):diff.index("diff -rcN old/sub")]
    single = CliRunner().invoke(app, ["notes.txt", "--edit", one])
    assert single.exit_code == 0 and single.stdout == (new / "notes.txt").read_text()


def test_batch_patch_copies_files_as_git_diff_c_says(tmp_path, monkeypatch):
    """`git diff -C --find-copies-harder` of a commit that copies a file with an edit, copies it as it is,
    copies an executable script, edits the copies' source too and renames another script with an edit:
    `batch --patch -i` (and with --atomic) leaves the commit's tree, each copy made from the source as it
    was before its own edit, each script still executable."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    lines = "".join(f"line {i}\n" for i in range(30))
    (tmp_path / "a.txt").write_text(lines)
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho run\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "old.sh").write_text("#!/bin/sh\n" + lines)
    (tmp_path / "old.sh").chmod(0o755)
    _repository(tmp_path)
    (tmp_path / "b.txt").write_text(lines.replace("line 5\n", "line five\n"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/c.txt").write_text(lines)
    shutil.copy2(tmp_path / "run.sh", tmp_path / "tool.sh")
    (tmp_path / "a.txt").write_text(lines.replace("line 20\n", "line twenty\n"))
    (tmp_path / "old.sh").rename(tmp_path / "new.sh")
    (tmp_path / "new.sh").write_text("#!/bin/sh\n" + lines.replace("line 9\n", "line nine\n"))
    _git(tmp_path, "add", "-A")
    diff = _git(tmp_path, "diff", "--cached", "-C", "--find-copies-harder")
    assert diff.count("copy from ") == 3 and "diff --git a/a.txt b/a.txt" in diff and "rename to new.sh" in diff
    _git(tmp_path, "commit", "-qm", "after")
    after = _tree(tmp_path)
    for atomic in ([], ["--atomic"]):
        _git(tmp_path, "reset", "-q", "--hard", "HEAD~1")
        _git(tmp_path, "clean", "-qfd")
        result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", *atomic], input=diff)
        assert result.exit_code == 0, result.output
        records = {r["file"]: r for r in map(json.loads, result.stdout.splitlines())}
        assert _tree(tmp_path) == after
        assert records["b.txt"]["copied_from"] == "a.txt" and records["docs/c.txt"]["copied_from"] == "a.txt"
        _git(tmp_path, "checkout", "-q", "-f", "HEAD@{1}")
    again = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diff)
    failed = {r["file"]: r["error"] for r in map(json.loads, again.stdout.splitlines()) if not r["ok"]}
    assert "cannot copy a.txt to b.txt: it exists" in failed["b.txt"]


def test_batch_atomic_applies_a_series_of_commits_each_to_the_files_the_last_left(tmp_path, monkeypatch):
    """The mails `git format-patch` writes of three commits: the first creates a module and edits a file,
    the second edits both again and copies the module, the third renames the copy with an edit and
    deletes the module. With --atomic (each commit's parts planned against the files the commits before
    it leave, none written yet) and without, the tree is the last commit's; with the series' second
    commit stale, --atomic writes nothing."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(8))
    (tmp_path / "calc.py").write_text(body)
    _repository(tmp_path)
    (tmp_path / "util.py").write_text(body.replace("def f", "def g"))
    (tmp_path / "calc.py").write_text(body.replace("x + 1\n", "x - 1\n"))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    (tmp_path / "util.py").write_text(body.replace("def f", "def g").replace("x + 2\n", "x * 2\n"))
    (tmp_path / "calc.py").write_text(body.replace("x + 1\n", "x - 1\n").replace("x + 6\n", "x - 6\n"))
    shutil.copy(tmp_path / "util.py", tmp_path / "util2.py")
    (tmp_path / "calc.py").chmod(0o755)
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "two")
    (tmp_path / "util2.py").rename(tmp_path / "helpers.py")
    (tmp_path / "helpers.py").write_text(body.replace("def f", "def g").replace("x + 2\n", "x * 2\n").replace("x + 7", "7"))
    (tmp_path / "util.py").unlink()
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "three")
    after = _tree(tmp_path)
    mails = _git(tmp_path, "format-patch", "-3", "--stdout", "-C", "--find-copies-harder", "-M")
    assert "copy to util2.py" in mails and "rename to helpers.py" in mails and "deleted file mode" in mails
    for atomic in (["--atomic"], []):
        _git(tmp_path, "reset", "-q", "--hard", "HEAD~3")
        result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", *atomic], input=mails)
        assert result.exit_code == 0, result.output
        assert _tree(tmp_path) == after
        _git(tmp_path, "checkout", "-q", "-f", "HEAD@{1}")
    _git(tmp_path, "reset", "-q", "--hard", "HEAD~3")
    (tmp_path / "calc.py").write_text(body.replace("x + 6\n", "x + 60\n"))  # the second commit's hunk no longer fits
    before = _tree(tmp_path)
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place", "--atomic", "--engine", "merge"],
                                input=mails)
    assert result.exit_code == 1 and _tree(tmp_path) == before and "nothing was written" in result.stderr


def test_the_summary_a_person_at_a_terminal_reads():
    """What a batch did, in one line: a record written counts as changed (with --in-place), one that would
    change without it; under --atomic, a failure leaves every file unwritten and none is counted."""
    from fastapply.batch import summary

    planned = [{"ok": True, "changed": True, "written": False, "moved_from": "a.py"},
               {"ok": True, "changed": True, "written": False, "deleted": True},
               {"ok": True, "changed": False, "written": False}]
    assert summary(planned, in_place=False) == "2 files would change (1 deleted, 1 moved), 1 unchanged"
    assert summary(planned + [{"ok": False}], in_place=True) == "0 files changed, 1 unchanged, 1 failed"
    assert summary([{"ok": True, "changed": True, "written": True, "copied_from": "a"}], True) == (
        "1 file changed (1 copied)")


def test_batch_patch_reverse_undoes_what_the_diff_did(tmp_path, monkeypatch):
    """`-R` applies a diff turned around (as `git apply -R`): after `git diff -M -C --binary` of a commit
    (an edit, a file created with CRLF ends, one deleted, one renamed with an edit, an executable bit
    set, a binary file changed, a copy, a last newline taken away) is applied, `-R` leaves the tree as it
    was; so for a series of mails (undone last first) and with --atomic; a file changed since is
    refused. A `*** Begin Patch` file added is deleted again, one it deleted cannot be made again."""
    _needs("git")
    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(8))
    files = {"calc.py": body, "gone.txt": "old\nnotes\n", "lib/util.py": body.replace("def f", "def g"),
             "run.sh": "echo hi\n", "logo.png": bytes(range(256)) * 4}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    _repository(tmp_path)
    before = _tree(tmp_path)
    (tmp_path / "calc.py").write_text(body.replace("x + 5", "x - 5").rstrip("\n"))
    (tmp_path / "win.bat").write_bytes(b"@echo off\r\necho hi\r\n")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "lib/util.py").rename(tmp_path / "lib/helpers.py")
    (tmp_path / "lib/helpers.py").write_text(body.replace("def f", "def g").replace("x + 3", "x * 3"))
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "logo.png").write_bytes(bytes(range(256)) * 3 + b"\xff" * 256)
    (tmp_path / "copy.py").write_text(body.replace("x + 1\n", "x + 100\n"))
    _git(tmp_path, "add", "-A")
    diff = _git(tmp_path, "diff", "--cached", "-M", "-C", "--find-copies-harder", "--binary", text=False)
    assert b"copy to copy.py" in diff and b"GIT binary patch" in diff and b"rename to lib/helpers.py" in diff
    _git(tmp_path, "commit", "-qm", "after")
    after = _tree(tmp_path)
    for atomic in ([], ["--atomic"]):
        undone = CliRunner().invoke(app, ["batch", "--patch", "-", "-R", "--in-place", *atomic], input=diff)
        assert undone.exit_code == 0, undone.output
        assert _tree(tmp_path) == before
        redone = CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=diff)
        assert redone.exit_code == 0 and _tree(tmp_path) == after
    (tmp_path / "win.bat").write_bytes(b"@echo off\r\necho changed\r\n")
    stale = CliRunner().invoke(app, ["batch", "--patch", "-", "-R", "--in-place", "--atomic"], input=diff)
    assert stale.exit_code == 1 and (tmp_path / "calc.py").read_text() == after["calc.py"][0]
    _git(tmp_path, "checkout", "-q", "--", "win.bat")
    # a series: two more commits, undone last first
    (tmp_path / "calc.py").write_text(body)
    _git(tmp_path, "commit", "-qam", "three")
    (tmp_path / "calc.py").write_text(body.replace("x + 7", "x + 70"))
    (tmp_path / "copy.py").unlink()
    _git(tmp_path, "commit", "-qam", "four")
    mails = _git(tmp_path, "format-patch", "-2", "--stdout", "--binary")
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "-R", "--in-place", "--atomic"], input=mails)
    assert result.exit_code == 0, result.output
    assert _tree(tmp_path) == after
    agent = ("*** Begin Patch\n*** Add File: docs/a.txt\n+one\n+two\n*** Update File: run.sh\n*** Move to: bin/run\n"
             "@@\n-echo hi\n+echo hello\n*** End Patch\n")
    assert CliRunner().invoke(app, ["batch", "--patch", "-", "--in-place"], input=agent).exit_code == 0
    result = CliRunner().invoke(app, ["batch", "--patch", "-", "-R", "--in-place"], input=agent)
    assert result.exit_code == 0, result.output
    assert _tree(tmp_path) == after
    gone = CliRunner().invoke(app, ["batch", "--patch", "-", "-R"], input="*** Begin Patch\n*** Delete File: x\n")
    assert gone.exit_code == 2 and "cannot make x again" in gone.stderr
