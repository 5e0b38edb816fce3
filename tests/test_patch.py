"""Edits written as a diff (``fastapply.patch``): unified diffs, SEARCH/REPLACE blocks, the ``*** Begin
Patch`` form; applied line for line where every hunk places itself, else merged as a snippet."""

import difflib
import random
import sysconfig
from pathlib import Path

import pytest

from fastapply.engine import EditRefused, read_edit, resolve_edit
from fastapply.errors import UsageError
from fastapply.merge import merge
from fastapply.diffs import read_patch
from fastapply.fileparts import deleted_text, link_targets
from fastapply.patch import apply_patch, as_snippet, as_update

CALC = '''import math


def area(r):
    return math.pi * r * r


def perimeter(r):
    return 2 * math.pi * r


def main():
    print(area(2), perimeter(2))
'''
TAU = CALC.replace("2 * math.pi * r", "math.tau * r")
STDLIB = Path(sysconfig.get_paths()["stdlib"])
FILES = [STDLIB / name for name in ("textwrap.py", "shlex.py", "fractions.py", "json/encoder.py")]


def unified(old: str, new: str, context: int = 3) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/f.py", "b/f.py", n=context))


def applied(original, edit, language="python"):
    patch = read_patch(edit, original)
    assert patch is not None
    return apply_patch(original, patch, language)


def test_a_unified_diff_is_applied_exactly_and_certain():
    result = applied(CALC, unified(CALC, TAU))
    assert (result.confidence, result.text) == ("certain", TAU)


def random_edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines(True)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        new = [lines[rng.randrange(len(lines))].replace("self", "this") for _ in range(rng.randint(0, 3))]
        lines[i:i + rng.randint(0, 3)] = new
    return "".join(lines)


@pytest.mark.parametrize("context", [3, 1, 0])
def test_every_diff_of_random_edits_of_real_files_gives_the_edited_file(context):
    """difflib's diffs (numbers exact) of random edits of real files: every answer is the edited file,
    and with context every one is certain (a hunk found more than once is placed by its line number).
    With no context a hunk of new lines alone is placed by its number, certain only where the diff's
    other hunks bear the numbers out. (No language: random lines break the syntax, a doubt of its own.)"""
    rng = random.Random(context)
    texts = [path.read_text("utf-8") for path in FILES if path.is_file()]
    assert texts
    certain = 0
    for _ in range(60):
        original = rng.choice(texts)
        edited = random_edit(original, rng)
        if edited == original:
            continue
        result = applied(original, unified(original, edited, context), None)
        assert result.text == edited
        certain += result.confidence == "certain"
        if context:
            assert result.confidence == "certain"
    assert certain > 30


def test_search_replace_blocks_and_the_begin_patch_form():
    blocks = ("calc.py\n```python\n<<<<<<< SEARCH\ndef perimeter(r):\n    return 2 * math.pi * r\n=======\n"
              "def perimeter(r):\n    return math.tau * r\n>>>>>>> REPLACE\n```\n")
    assert (applied(CALC, blocks).confidence, applied(CALC, blocks).text) == ("certain", TAU)
    agent = ("*** Begin Patch\n*** Update File: calc.py\n@@ def perimeter(r):\n-    return 2 * math.pi * r\n"
             "+    return math.tau * r\n*** End Patch\n")
    assert applied(CALC, agent).text == TAU
    twice = "<<<<<<< SEARCH\n\n\n=======\n\n>>>>>>> REPLACE\n"  # blank lines are everywhere
    assert applied(CALC, twice).confidence != "certain"
    with pytest.raises(UsageError, match="has no REPLACE line"):
        read_patch("<<<<<<< SEARCH\na\n=======\nb\n")


def test_the_search_replace_blocks_of_cline_and_roo_code():
    cline = "------- SEARCH\n    return 2 * math.pi * r\n=======\n    return math.tau * r\n+++++++ REPLACE\n"
    assert (applied(CALC, cline).confidence, applied(CALC, cline).text) == ("certain", TAU)
    roo = ("<<<<<<< SEARCH\n:start_line:9\n-------\n    return 2 * math.pi * r\n=======\n    return math.tau * r\n"
           ">>>>>>> REPLACE\n")
    assert (applied(CALC, roo).confidence, applied(CALC, roo).text) == ("certain", TAU)
    assert read_patch(roo).hunks[0].start == 9
    notes = "# Notes\n\n-------\nold\n"  # a line of dashes that is the file's own (REPLACE keeps it) stays in the block
    kept = "<<<<<<< SEARCH\n-------\nold\n=======\n-------\nnew\n>>>>>>> REPLACE\n"
    assert applied(notes, kept, "markdown").text == "# Notes\n\n-------\nnew\n"


def test_the_scope_a_begin_patch_hunk_names_places_lines_found_more_than_once():
    """The ``*** Begin Patch`` form names a hunk's class or function (``@@ class B:``, one under another
    where one is not enough) where its lines are found more than once: the place within that scope."""
    two = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n\n\nclass B:\n" \
          "    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
    want = two[::-1].replace("1 nruter", "01 nruter", 1)[::-1]  # B.f's return changed
    hunk = "-        return 1\n+        return 10\n"
    for headers in ("@@ class B:\n@@     def f(self):\n", "@@ class B:\n", "@@ class B: @@\n     def f(self):\n"):
        edit = f"*** Begin Patch\n*** Update File: two.py\n{headers}{hunk}*** End Patch\n"
        assert (applied(two, edit).confidence, applied(two, edit).text) == ("certain", want), headers
    assert applied(two, f"@@ class C:\n{hunk}").confidence != "certain"  # a scope the file lacks places nothing
    assert applied(two, f"@@ def g(self):\n{hunk}").confidence != "certain"  # nor one whose block has ended
    once = "@@ class B:\n-        return 3\n+        return 30\n"  # found once: the header need not be its scope
    assert applied(two.replace("return 2\n", "return 3\n", 1), once).confidence == "certain"  # (git's function line)
    twice = "x = 1\nprint(x)\n\nx = 1\nprint(x)\n"  # "*** End of File": the place that ends the file
    end = ("*** Begin Patch\n*** Update File: f.py\n@@\n x = 1\n-print(x)\n+print(x + 1)\n*** End of File\n"
           "*** End Patch\n")
    assert (applied(twice, end).confidence, applied(twice, end).text) == ("certain", twice[:-2] + " + 1)\n")
    assert applied(twice, end.replace("*** End of File\n", "")).confidence != "certain"
    braces = "function a() {\n  return 1;\n}\nfunction b() {\n  return 1;\n}\n"
    edit = "@@ function b() {\n-  return 1;\n+  return 2;\n"
    assert applied(braces, edit, "javascript").text == braces[::-1].replace(";1", ";2", 1)[::-1]


def test_a_hunk_indented_as_a_whole_more_or_less_than_the_file_is_placed_with_the_files_indentation():
    """A chat model quotes a method without its class's indentation (or with more): every line of the hunk
    is the file's but for one indentation, in one place; its new lines are written indented as the file's."""
    store = "import os\n\n\nclass Store:\n    def load(self, name):\n        with open(name) as f:\n" \
            "            return f.read()\n"
    want = store.replace("open(name)", 'open(name, encoding="utf-8")')
    dedented = '@@\n def load(self, name):\n-    with open(name) as f:\n+    with open(name, encoding="utf-8") as f:\n'
    blocks = "<<<<<<< SEARCH\n            with open(name) as f:\n=======\n            with open(name, encoding=" \
             "\"utf-8\") as f:\n                if not f:\n                    return ''\n>>>>>>> REPLACE\n"  # 4 more
    deeper = want.replace("as f:\n", "as f:\n            if not f:\n                return ''\n")
    assert (applied(store, dedented).confidence, applied(store, dedented).text) == ("certain", want)
    assert (applied(store, blocks).confidence, applied(store, blocks).text) == ("certain", deeper)
    twice = store + ("\n\nclass Cache:\n  def load(self, name):\n      with open(name) as f:\n"
                     "          return f.read()\n")
    assert applied(twice, dedented).confidence != "certain"  # two places, each but for its own indentation
    mixed = "@@\n def load(self, name):\n-        with open(name) as f:\n+        with open(name, 'r') as f:\n"
    assert applied(store, mixed).confidence != "certain"  # not one indentation for every line


def test_a_hunk_spaced_otherwise_than_the_file_within_its_lines_is_placed_where_that_is_one_place():
    """An agent quotes ``join(self.root,name)`` for ``join(self.root, name)``: the hunk is the file's but for
    spacing within its lines (indentation the same), in one place: placed, the file's context lines kept."""
    store = "class Store:\n    def load(self, name):\n        path = join(self.root, name)\n" \
            "        return read(path)\n"
    blocks = "<<<<<<< SEARCH\n    def load(self,name):\n        path = join(self.root,name)\n=======\n" \
             "    def load(self,name):\n        path = join(self.root, name.strip())\n>>>>>>> REPLACE\n"
    result = applied(store, blocks)
    assert (result.confidence, result.text) == ("certain", store.replace("name)\n", "name.strip())\n"))
    twice = store + "\n\nclass Cache:\n    def load(self, name):\n        path = join(self.root,  name)\n"
    assert applied(twice, blocks).confidence != "certain"  # two places but for spacing
    deeper = blocks.replace("\n        path = join(self.root,name)\n=", "\n            path = join(self.root,name)\n=")
    assert applied(store, deeper).confidence != "certain"  # indentation is not spacing


def test_a_chat_models_hunk_with_wrong_numbers_or_none_is_placed_by_its_lines():
    wrong = "@@ -40,3 +40,3 @@\n def perimeter(r):\n-    return 2 * math.pi * r\n+    return math.tau * r\n"
    hunk = "@@\n def perimeter(r):\n-    return 2 * math.pi * r\n+    return math.tau * r\n"
    bare = f"```diff\n{hunk}```\n"
    for edit in (wrong, hunk):
        assert (applied(CALC, edit).confidence, applied(CALC, edit).text) == ("certain", TAU)
    counted_too_few = "@@ -8,1 +8,1 @@\n def perimeter(r):\n-    return 2 * math.pi * r\n+    return math.tau * r\n"
    assert applied(CALC, counted_too_few).text == TAU  # its lines run on past the counts
    answer = f"Use the constant tau:\n\n{bare}\nThis keeps `area` as it is.\n"  # a chat model's whole answer
    assert resolve_edit(CALC, answer, "python", "merge").text == TAU
    readme = "# Calc\n\n```python\nprint(area(2))\n```\n"  # a file with fences of its own: they may be its text
    example = "# Calc\n\n```diff\n@@\n-a\n+b\n```\nDiffs look like this.\n"
    assert read_edit(readme, example, "markdown").patch is None and read_edit(CALC, example, "python").patch


def test_a_hunk_found_more_than_once_is_placed_by_numbers_that_add_up_and_no_others():
    """Two blank lines are in the file three times: a tool's header (old and new numbers agreeing) places
    them; a header whose numbers do not add up (a chat model's) does not, even where it names one of the
    places, and the diff goes to the merge engine as a snippet."""
    edit = "@@ -6,2 +6,3 @@\n \n+# Perimeter.\n \n"
    assert applied(CALC, edit).text == CALC.replace("\n\n\ndef perimeter", "\n\n# Perimeter.\n\ndef perimeter")
    assert applied(CALC, edit).confidence == "certain"
    shifted = "@@ -6,2 +13,3 @@\n \n+# Perimeter.\n \n"
    result = applied(CALC, shifted)
    assert result.confidence != "certain"
    assert result.reasons[0] == "hunk 1's old lines are in the file 3 times; the diff's line numbers do not place it"


def test_a_hunk_whose_context_is_stale_is_placed_keeping_the_files_lines_certain_only_at_its_line():
    """A diff written against an older file (or a chat model misremembering a line): every line it
    deletes is in the file and all but one of its context lines, in one place. It is placed there, the
    file's own line kept (the diff does not ask to change it): certain where that place is the line its
    header names (numbers that add up), else likely, and the model is shown the snippet with the file's
    line, not the stale one (shown the stale one, fastapply-small wrote it)."""
    older = "@@ -8,6 +8,6 @@\n def perimeter(r):  # radius\n-    return 2 * math.pi * r\n+    return math.tau * r\n \n \n def main():\n"
    assert (applied(CALC, older).confidence, applied(CALC, older).text) == ("certain", TAU)
    for elsewhere in (older.replace("-8,6 +8,6", "-20,6 +20,6"), older.replace("@@ -8,6 +8,6 @@", "@@")):
        result = applied(CALC, elsewhere)
        assert (result.confidence, result.text) == ("likely", TAU)
        assert result.reasons == ("hunk 1's context differs from the file in 1 line(s), which are kept as the file "
                                  "has them",)
    shown = as_update(read_patch(older), CALC, "python")
    assert "def perimeter(r):\n    return math.tau * r\n" in shown and "# radius" not in shown
    deleted_stale = "@@\n def perimeter(r):\n-    return 2 * math.pi * radius\n+    return math.tau * r\n"
    assert applied(CALC, deleted_stale).reasons[0] == "hunk 1's old lines are not in the file"  # a deleted line must match


def test_a_stale_hunk_is_merged_as_a_snippet_and_never_certain():
    stale = "@@ -8,2 +8,2 @@\n def perimeter(radius):\n-    return 2 * math.pi * r\n+    return math.tau * r\n"
    result = applied(CALC, stale)
    assert result.confidence != "certain" and result.reasons[0] == "hunk 1's old lines are not in the file"
    snippet = as_snippet(read_patch(stale), "python")
    assert snippet == ("# ... existing code ...\ndef perimeter(radius):\n    return math.tau * r\n"
                       "    # ... existing code ...\n")
    with pytest.raises(EditRefused, match="hunk 1's old lines are not in the file"):
        resolve_edit(CALC, stale, "python", "merge")
    # at the file's end (by its numbers, or its last old line the file's): no marker after it to copy
    end = "@@ -12,2 +12,2 @@\n def main():\n-    print(area(3), perimeter(3))\n+    print(area(3))\n"
    assert as_snippet(read_patch(end), "python", CALC) == "# ... existing code ...\ndef main():\n    print(area(3))\n"
    top = "@@\n import math\n-\n+import sys\n"
    assert as_snippet(read_patch(top), "python", CALC) == "import math\nimport sys\n# ... existing code ...\n"


def test_context_lines_keep_the_files_own_text_and_the_final_newline_follows_the_diff():
    spaced = CALC.replace("def perimeter(r):", "def perimeter(r):   ")  # trailing spaces the diff lost
    edit = "@@ -8,2 +8,2 @@\n def perimeter(r):\n-    return 2 * math.pi * r\n+    return math.tau * r\n"
    assert applied(spaced, edit).text == spaced.replace("2 * math.pi * r", "math.tau * r")
    bare_end = CALC.rstrip("\n")
    added = ("@@ -13 +13,2 @@\n-    print(area(2), perimeter(2))\n\\ No newline at end of file\n"
             "+    print(area(2), perimeter(2))\n+    return 0\n")
    assert applied(bare_end, added).text == CALC + "    return 0\n"
    cut = "@@ -13 +13 @@\n-    print(area(2), perimeter(2))\n+    print(area(3))\n\\ No newline at end of file\n"
    assert applied(CALC, cut).text == CALC.replace("print(area(2), perimeter(2))\n", "print(area(3))")


def test_what_is_not_a_diff_and_a_diff_of_several_files():
    assert read_patch("def f():\n    return 1\n") is None  # a snippet
    assert read_patch("delete the function main") is None  # an instruction
    assert read_patch("- item\n- other @@ item\n") is None  # a YAML or Markdown list
    notes = "# Diffs\n\n@@ -1 +1 @@\n-a\n+b\n"  # a file that holds hunk headers is edited by snippets only
    assert read_patch("@@ -1 +1 @@\n-a\n+c\n", notes) is None
    two = unified(CALC, TAU) + unified(CALC, TAU).replace("a/f.py", "a/g.py").replace("b/f.py", "b/g.py")
    with pytest.raises(UsageError, match="the diff edits 2 files"):
        read_patch(two)
    with pytest.raises(UsageError, match="deletes a file.*fastapply batch --patch"):
        read_patch("--- a/calc.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-import math\n")
    with pytest.raises(UsageError, match="deletes a file.*fastapply batch --patch"):
        read_patch("*** Begin Patch\n*** Delete File: calc.py\n*** End Patch\n")  # no hunk: not a snippet either


def test_a_deleted_dash_dash_comment_line_is_not_read_as_a_header():
    lua = "-- old note\nlocal x = 1\nreturn x\n"
    edit = "--- a/m.lua\n+++ b/m.lua\n@@ -1,2 +1,1 @@\n--- old note\n local x = 1\n"
    assert applied(lua, edit, "lua").text == "local x = 1\nreturn x\n"


def test_the_cli_writes_a_diff_with_the_shipped_model_and_runs_no_model(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from fastapply.cli import app

    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)  # the shipped model: a certain diff needs no run of it
    path, edit = tmp_path / "calc.py", tmp_path / "edit.diff"
    path.write_text(CALC)
    edit.write_text(unified(CALC, TAU).replace("f.py", "calc.py"))
    result = CliRunner().invoke(app, [str(path), "--edit-file", str(edit), "--in-place"])
    assert result.exit_code == 0, result.output
    assert path.read_text() == TAU
    edit.write_text("@@\n def perimeter(radius):\n-    return 2\n+    return 3\n")  # stale: merged as a snippet
    result = CliRunner().invoke(app, [str(path), "--edit-file", str(edit), "--engine", "merge", "--in-place"])
    assert result.exit_code == 3 and path.read_text() == TAU


def test_an_instruction_beside_a_diff_is_applied_to_the_patched_file():
    text = CALC + "\n\ndef unused():\n    return None\n"
    outcome = resolve_edit(text, unified(CALC, TAU), "python", "merge", instruction="Delete the function `unused`.")
    assert outcome.text == TAU
    assert merge(outcome.text, as_snippet(read_patch(unified(CALC, TAU)), "python"), "python").text == TAU


def test_a_diff_of_several_files_is_split_into_each_files_part():
    from fastapply.fileparts import split_files

    ru = ("--- a/x.py\t2026-11-29\n+++ b/x.py\t2026-11-29\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
          "--- a/y.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-b = 1\n")
    x, y = split_files(ru)
    assert (x.line, x.path, x.action, y.line, y.path, y.action) == (1, "x.py", "edit", 6, "y.py", "delete")
    assert apply_patch("a = 1\n", read_patch(x.text), "python").text == "a = 2\n"
    assert deleted_text(y.text) == "b = 1\n"
    with pytest.raises(UsageError, match="deletes a file"):
        read_patch(y.text)  # fastapply FILE applies an edit to the file; batch --patch deletes it
    agent = ("*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** Update File: b.py\n@@\n-y\n+z\n"
             "*** End Patch\n")
    assert [(part.line, part.path) for part in split_files(agent)] == [(2, "a.py"), (6, "b.py")]
    with pytest.raises(UsageError, match="names no file"):
        split_files("@@\n-a\n+b\n")


def test_what_each_files_part_does_to_it():
    """A part creates, deletes or moves its file as git (`new file mode`, `--- /dev/null`, `deleted file
    mode`, `rename from`), `diff -N` (a file dated at the epoch) and the *** Begin Patch form (`*** Add
    File:`, `*** Delete File:`, `*** Move to:`) say; a binary part cannot be applied."""
    from fastapply.fileparts import split_files

    git = ("diff --git a/new.py b/new.py\nnew file mode 100755\nindex 0000000..e299757\n--- /dev/null\n+++ b/new.py\n"
           "@@ -0,0 +1 @@\n+x = 1\n"
           "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
           "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\nindex 1..0\n--- a/gone.py\n+++ /dev/null\n"
           "@@ -1 +0,0 @@\n--- a comment\n"
           "diff --git a/old name.py b/sub/new.py\nsimilarity index 100%\nrename from old name.py\n"
           "rename to sub/new.py\n"
           "diff --git a/a.py b/b.py\nsimilarity index 80%\nrename from a.py\nrename to b.py\nindex 1..2 100644\n"
           "--- a/a.py\n+++ b/b.py\n@@ -1 +1 @@\n-a\n+b\n"
           "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
           "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n")
    parts = split_files(git)
    assert [(p.path, p.action, p.source, p.mode, p.hunks, bool(p.problem)) for p in parts] == [
        ("new.py", "create", None, 0o100755, True, False), ("empty.txt", "create", None, 0o100644, False, False),
        ("gone.py", "delete", None, None, True, False), ("sub/new.py", "move", "old name.py", None, False, False),
        ("b.py", "move", "a.py", None, True, False), ("run.sh", "edit", None, 0o100755, False, False),
        ("logo.png", "edit", None, None, False, True)]
    assert deleted_text(parts[2].text) == "-- a comment\n"  # a deleted line that looks like a header
    links = ("diff --git a/link b/link\nnew file mode 120000\nindex 0000000..8a3b6e5\n--- /dev/null\n+++ b/link\n"
             "@@ -0,0 +1 @@\n+calc.py\n\\ No newline at end of file\n"
             "diff --git a/lib b/lib\nindex 1234567..89abcde 120000\n--- a/lib\n+++ b/lib\n@@ -1 +1 @@\n-old\n"
             "\\ No newline at end of file\n+new\n\\ No newline at end of file\n")
    assert [(p.path, p.action, p.link, p.problem, link_targets(p.text)) for p in split_files(links)] == [
        ("link", "create", True, "", (None, "calc.py")), ("lib", "edit", True, "", ("old", "new"))]
    assert apply_patch("", read_patch(parts[0].text), "python").text == "x = 1\n"
    quoted = ('diff --git "a/caf\\303\\251.txt" "b/men\\303\\274 \\"1\\".txt"\nsimilarity index 100%\n'
              'rename from "caf\\303\\251.txt"\nrename to "men\\303\\274 \\"1\\".txt"\n')
    assert [(p.path, p.source) for p in split_files(quoted)] == [('menü "1".txt', "café.txt")]  # git's quotes off
    epoch = ("--- a/n.py\t1970-01-01 00:00:00.000000000 +0000\n+++ b/n.py\t2026-11-29 05:00:00.0 +0000\n"
             "@@ -0,0 +1 @@\n+n\n")
    assert [(p.path, p.action) for p in split_files(epoch)] == [("n.py", "create")]
    agent = ("*** Begin Patch\n*** Add File: docs/hello.txt\n+Hello\n+\n+world\n*** Update File: app.py\n"
             "*** Move to: src/main.py\n@@ def greet():\n-print('Hi')\n+print('Hello')\n*** Delete File: old.txt\n"
             "*** End Patch\n")
    parts = split_files(agent)
    assert [(p.line, p.path, p.action, p.source, p.hunks) for p in parts] == [
        (2, "docs/hello.txt", "create", None, True), (6, "src/main.py", "move", "app.py", True),
        (11, "old.txt", "delete", None, False)]
    assert apply_patch("", read_patch(parts[0].text), None).text == "Hello\n\nworld\n"
    assert deleted_text(parts[2].text) is None  # *** Delete File: shows nothing of the file
    moved = apply_patch("def greet():\n    pass\nprint('Hi')\n", read_patch(parts[1].text), "python")
    assert moved.confidence == "certain" and moved.text.endswith("print('Hello')\n")


def test_eval_and_bench_show_a_model_the_snippet_a_diff_amounts_to(tmp_path, tokenizer):
    """As `fastapply FILE` does: a tiny Llama that has learnt to apply the snippet of a diff's hunk writes
    the edit when an eval task or a bench case is the diff itself (shown the diff's text, it would not)."""
    from fastapply.bench import BenchCase, run_bench
    from fastapply.evaluate import EvalConfig, run_eval
    from fastapply.tasks import Task
    from tests.serving import EXPECTED, ORIGINAL, learn_example

    diff = unified(ORIGINAL, EXPECTED).replace("f.py", "greet.py")
    model = learn_example(tokenizer, update=as_update(read_patch(diff, ORIGINAL), ORIGINAL, "python"))
    assert model is not None
    task = Task("greet-diff", "python", "greet.py", ORIGINAL, diff, "", EXPECTED, {"package": "example"})
    config = EvalConfig("model", ("plain",), model="tiny", dtype="float32", device="cpu", time_prefill=False)
    record = run_eval([task], config, tmp_path, model=model, tokenizer=tokenizer).records[0]
    assert record["output"] == EXPECTED and record["validation"] == []
    case = BenchCase("greet-diff", ORIGINAL, diff, expected=EXPECTED, language="python")
    rows = run_bench(model, tokenizer, [case], methods=("plain", "fastapply"), max_new_tokens=64)
    assert [row.stats.chars for row in rows] == [len(EXPECTED)] * 2


@pytest.mark.parametrize("crlf", [False, True])
def test_gits_own_diff_of_the_file_is_certain_by_the_object_ids_it_names(tmp_path, crlf):
    """`git diff -U0` of lines added alone is placed by its line numbers, which a chat model's diff may
    also give wrong, so alone it is not certain; git's `index OLD..NEW` line proves it was made of this
    very file and what it gives is the file it was made to (CRLF files too)."""
    import re
    import shutil
    import subprocess

    from typer.testing import CliRunner

    from fastapply.cli import app

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    added = CALC.replace("def area(r):\n", 'def area(r):\n    """The area."""\n').replace(
        "perimeter(2))\n", 'perimeter(2))\n    print("done")\n')
    end = "\r\n" if crlf else "\n"
    path, new, edit = tmp_path / "calc.py", tmp_path / "new.py", tmp_path / "edit.diff"
    path.write_bytes(CALC.replace("\n", end).encode())
    new.write_bytes(added.replace("\n", end).encode())
    diff = subprocess.run(["git", "diff", "--no-index", "-U0", "calc.py", "new.py"], cwd=tmp_path,
                          capture_output=True).stdout
    edit.write_bytes(diff)
    result = CliRunner().invoke(app, [str(path), "--edit-file", str(edit), "--engine", "merge", "--in-place"])
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == new.read_bytes()
    text = diff.decode().replace("\r\n", "\n")
    assert applied(CALC, text).confidence == "certain"
    assert applied(CALC, re.sub(r"(?m)^index .*\n", "", text)).confidence == "likely"  # numbers alone
    changed = applied(CALC + "\n# the end\n", text)  # another file: placed by its numbers, no proof
    assert changed.confidence == "likely" and changed.text == added + "\n# the end\n"


def test_gits_diff_of_a_file_that_holds_hunks_itself_is_read_as_a_diff(tmp_path):
    """A file holding hunk headers of its own (notes on diffs) is edited by snippets, which may be its own
    text; git's diff of it, its `index` line naming this very file, is read as the diff it is."""
    import re
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    notes = "# Diffs\n\nA hunk:\n\n```diff\n@@ -1 +1 @@\n-a = 1\n+a = 2\n```\n\nThat is all.\n"
    edited = notes.replace("That is all.", "That is all there is.")
    (tmp_path / "notes.md").write_text(notes)
    (tmp_path / "new.md").write_text(edited)
    diff = subprocess.run(["git", "diff", "--no-index", "notes.md", "new.md"], cwd=tmp_path, capture_output=True,
                          text=True).stdout
    assert read_patch(diff, notes) is not None
    assert resolve_edit(notes, diff, "markdown", "merge").text == edited
    assert read_patch(re.sub(r"(?m)^index .*\n", "", diff), notes) is None  # no proof: maybe the file's own text
    assert read_patch(diff, notes + "\n") is None  # another file's diff
    assert read_patch("--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", notes) is None  # its own text, not an error


def test_fastapply_file_does_not_edit_in_place_a_file_the_diff_moves_or_copies():
    """`fastapply FILE` edits FILE where it is: a diff that renames it (with or without hunks, git's or
    the *** Begin Patch form), or copies another file to it, is a usage error pointing at `fastapply batch
    --patch`; its other parts are FILE's as before."""
    from fastapply.fileparts import part_for

    agent = ("*** Begin Patch\n*** Update File: app.py\n*** Move to: src/main.py\n@@\n-x = 1\n+x = 2\n"
             "*** Update File: b.py\n@@\n-y\n+z\n*** End Patch\n")
    for path in ("app.py", "src/main.py"):
        with pytest.raises(UsageError, match="the diff moves app.py to src/main.py"):
            part_for(agent, path)
    assert part_for(agent, "b.py").startswith("*** Update File: b.py")
    with pytest.raises(UsageError, match="moves app.py to lib.py"):
        part_for("diff --git a/app.py b/lib.py\nsimilarity index 100%\nrename from app.py\nrename to lib.py\n",
                 "app.py")
    copied = ("diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
              "diff --git a/app.py b/lib.py\nsimilarity index 90%\ncopy from app.py\ncopy to lib.py\n")
    assert part_for(copied, "app.py").startswith("diff --git a/app.py b/app.py\n")  # the copy's original: its own part
    with pytest.raises(UsageError, match="copies app.py to lib.py"):
        part_for(copied, "lib.py")


def test_diff_r_parts_and_the_folders_taken_off_their_paths():
    """`diff -ruN old new`: its `diff -ruN` lines start parts, each side's own folder is dropped (as git's
    a/ and b/), files dated at the epoch are created or deleted; `Only in` (no -N) and `Binary files ...
    differ` are parts that cannot be applied. `-p N` takes N folders off (rename and *** lines, which
    have no a/ or b/, one fewer)."""
    from fastapply.fileparts import split_files

    diff_r = ("Binary files old/logo.png and new/logo.png differ\nOnly in new/docs: guide.md\n"
              "diff -ruN old/src/gone.py new/src/gone.py\n--- old/src/gone.py\t2026-11-29 08:00:00.0 +0000\n"
              "+++ new/src/gone.py\t1970-01-01 00:00:00.000000000 +0000\n@@ -1 +0,0 @@\n-x = 1\n"
              "diff -ruN old/src/calc.py new/src/calc.py\n--- old/src/calc.py\t2026-11-29 08:00:00.0 +0000\n"
              "+++ new/src/calc.py\t2026-11-29 08:01:00.0 +0000\n@@ -1 +1 @@\n-y = 1\n+y = 2\n")
    parts = split_files(diff_r)
    assert [(p.line, p.path, p.action, p.problem.split(" (")[0]) for p in parts] == [
        (1, "logo.png", "edit", "a binary file's change without its data"),
        (2, "docs/guide.md", "edit", "a file diff -r shows on one side only"),
        (3, "src/gone.py", "delete", ""), (8, "src/calc.py", "edit", "")]
    assert apply_patch("y = 1\n", read_patch(parts[3].text), "python").text == "y = 2\n"  # its diff -ruN line read
    assert [p.path for p in split_files(diff_r, 0)] == ["new/logo.png", "new/docs/guide.md", "old/src/gone.py",
                                                        "new/src/calc.py"]
    assert [p.path for p in split_files(diff_r.split("Only in")[0])] == ["logo.png"]  # a binary file alone too
    git = ("diff --git a/src/app/x.py b/src/app/x.py\n--- a/src/app/x.py\n+++ b/src/app/x.py\n@@ -1 +1 @@\n-a\n+b\n"
           "diff --git a/src/app/old.py b/src/app/new.py\nsimilarity index 100%\nrename from src/app/old.py\n"
           "rename to src/app/new.py\n")
    assert [(p.path, p.source) for p in split_files(git)] == [("src/app/x.py", None),
                                                              ("src/app/new.py", "src/app/old.py")]
    assert [(p.path, p.source) for p in split_files(git, 3)] == [("x.py", None), ("new.py", "old.py")]
    modes = ("diff --git a/src/run.sh b/src/run.sh\nold mode 100644\nnew mode 100755\n"
             "diff --git a/src/new.sh b/src/new.sh\nnew file mode 100755\nindex 0000000..e69de29\n")
    assert [(p.path, p.action, p.mode) for p in split_files(modes, 2)] == [("run.sh", "edit", 0o100755),
                                                                           ("new.sh", "create", 0o100755)]
    agent = "*** Begin Patch\n*** Update File: src/x.py\n@@\n-a\n+b\n*** End Patch\n"
    assert [p.path for p in split_files(agent, 1)] == ["src/x.py"]
    assert [p.path for p in split_files(agent, 2)] == ["x.py"]
    # no folder of each side's own: paths as written (a/ and b/ dropped where there)
    one_side = "--- orig/src/x.py\n+++ src/x.py\n@@ -1 +1 @@\n-a\n+b\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-c\n+d\n"
    assert [p.path for p in split_files(one_side)] == ["src/x.py", "y.py"]
    with pytest.raises(UsageError, match=r"cannot take 3 folder\(s\) off the diff's path new/logo.png"):
        split_files(diff_r, 3)


def test_the_diffs_of_svn_cvs_and_mercurial_and_a_submodule():
    """svn diff's `Index:` line and rule, CVS's (with `RCS file:`, `retrieving revision` and its diff
    command) and hg diff's `diff -r` line start a file's part and are read as its header; git's change of
    a submodule (mode 160000) is a part that cannot be applied."""
    from fastapply.fileparts import split_files

    hunk = "@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    rule = "=" * 67
    svn = "".join(f"Index: {name}\n{rule}\n--- {name}\t(revision 12)\n+++ {name}\t(working copy)\n{hunk}"
                  for name in ("x.txt", "src/y.txt"))
    cvs = "".join(f"Index: {name}\n{rule}\nRCS file: /cvs/{name},v\nretrieving revision 1.4\ndiff -u -r1.4 {name}\n"
                  f"--- {name}\t12 Nov 2026 10:00:00 -0000\t1.4\n+++ {name}\t29 Nov 2026 08:00:00 -0000\n{hunk}"
                  for name in ("x.txt", "src/y.txt"))
    hg = "".join(f"diff -r 1a2b3c4d5e6f {name}\n--- a/{name}\tThu Nov 26 10:00:00 2026 +0000\n"
                 f"+++ b/{name}\tSun Nov 29 08:00:00 2026 +0000\n{hunk}" for name in ("x.txt", "src/y.txt"))
    for diff in (svn, cvs, hg):
        parts = split_files(diff)
        assert [p.path for p in parts] == ["x.txt", "src/y.txt"], diff
        assert all(apply_patch("a\nb\n", read_patch(p.text), None).text == "a\nB\n" for p in parts)
    submodule = ("diff --git a/vendor/lib b/vendor/lib\nindex 1234567..89abcde 160000\n--- a/vendor/lib\n"
                 "+++ b/vendor/lib\n@@ -1 +1 @@\n-Subproject commit 1234567\n+Subproject commit 89abcde\n")
    assert [(p.path, p.problem.split(" (")[0]) for p in split_files(submodule)] == [
        ("vendor/lib", "a submodule's change")]


def test_a_tools_hunk_is_read_as_far_as_its_counts():
    """In git's diff (and diff -r's, svn's, hg's) a hunk's counts are right: a deleted `-- x` line before
    an added `++ y` line reads `--- x` / `+++ y`, and is the hunk's, not a new file's header. A chat
    model's diff (no such header) may miscount: there a `---` / `+++` pair still starts the next file."""
    from fastapply.fileparts import split_files

    sql = "select 1;\n-- x\nselect 2;\n"
    git = ("diff --git a/q.sql b/q.sql\nindex 1234567..89abcde 100644\n--- a/q.sql\n+++ b/q.sql\n"
           "@@ -1,3 +1,3 @@\n select 1;\n--- x\n+++ y\n select 2;\n"
           "diff --git a/r.sql b/r.sql\n--- a/r.sql\n+++ b/r.sql\n@@ -1 +1 @@\n-a\n+b\n")
    parts = split_files(git)
    assert [p.path for p in parts] == ["q.sql", "r.sql"]
    assert apply_patch(sql, read_patch(parts[0].text), None).text == "select 1;\n++ y\nselect 2;\n"
    chat = ("--- a/q.sql\n+++ b/q.sql\n@@ -1,9 +1,9 @@\n select 1;\n-select 2;\n+select 3;\n"
            "--- a/r.sql\n+++ b/r.sql\n@@ -1 +1 @@\n-a\n+b\n")  # over-counted: the next file comes sooner
    assert [p.path for p in split_files(chat)] == ["q.sql", "r.sql"]
