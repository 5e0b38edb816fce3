"""A chat model's whole answer as the edit (``fastapply.answer``): its code blocks, the file each names."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fastapply.answer import answer_edit, code_blocks, deletes_in_use, split_answer
from fastapply.cli import app
from fastapply.engine import merge_edit, merge_reading, read_edit, resolve_edit
from fastapply.errors import UsageError

STORE = '''import os


class Store:
    def __init__(self, root):
        self.root = root

    def path(self, name):
        return os.path.join(self.root, name)

    def load(self, name):
        with open(self.path(name)) as f:
            return f.read()
'''
UTF8 = STORE.replace("open(self.path(name))", 'open(self.path(name), encoding="utf-8")')
SNIPPET = '''class Store:
    # ... existing code ...
    def load(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()
'''
RUST = '''use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone)]
pub struct Cache {
    entries: HashMap<String, String>,
    capacity: usize,
}

impl Cache {
    pub fn new(capacity: usize) -> Self {
        Cache {
            entries: HashMap::new(),
            capacity,
        }
    }

    pub fn get(&self, key: &str) -> Option<&String> {
        self.entries.get(key)
    }

    pub fn insert(&mut self, key: String, value: String) {
        if self.entries.len() >= self.capacity {
            return;
        }
        self.entries.insert(key, value);
    }
}

impl fmt::Display for Cache {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Cache({} entries)", self.entries.len())
    }
}
'''
IMPL = '''impl Cache {
    // ... existing code ...

    pub fn insert(&mut self, key: String, value: String) -> bool {
        if self.entries.len() >= self.capacity {
            return false;
        }
        self.entries.insert(key, value);
        true
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
'''
RUST_MERGED = RUST.replace(RUST[RUST.index("    pub fn insert"):RUST.index("}\n\nimpl fmt")],
                           IMPL[IMPL.index("    pub fn insert"):IMPL.rindex("}")])  # the snippet's methods in place
CALC = "def area(r):\n    return 3.14 * r * r\n"
runner = CliRunner()


def test_the_code_block_of_an_answer_is_the_edit_and_code_it_leaves_unsaid_is_kept():
    """Words around the block aside. The block starts at `class Store:` with no marker above it: from a
    chat model's answer, that line is the file's and its code above is kept."""
    answer = f"Open it as UTF-8:\n\n```python\n{SNIPPET}```\n\nThat is all.\n"
    outcome = resolve_edit(STORE, answer, "python", "merge")
    assert (outcome.text, outcome.merge.confidence) == (UTF8, "certain")
    indented = "".join(f"   {line}\n" for line in SNIPPET.splitlines())
    listed = f"1. Change `load`:\n\n   ```python\n{indented}   ```\n"
    assert resolve_edit(STORE, listed, "python", "merge").text == UTF8  # a block under a list item


def test_an_answer_that_may_mean_the_code_around_it_deleted_is_not_certain():
    """From line 2 on, with no marker above: `from __future__ ...` deleted or kept? Either reading makes a
    working file, so the merge is likely (a model or a refusal decides); `import os` above `class Store:`
    cannot be meant deleted, the methods use `os`."""
    future = "from __future__ import annotations\n" + STORE
    answer = "Here:\n\n```python\nimport os\n\n\n" + SNIPPET + "```\n"
    merged = merge_reading(future, read_edit(future, answer, "python"), "python")
    assert (merged.confidence, merged.text) == ("likely", "from __future__ import annotations\n" + UTF8)
    assert "may be meant kept (as merged) or deleted" in merged.reasons[0]
    assert merge_edit(future, "import os\n\n\n" + SNIPPET, "python").text == UTF8  # a snippet says: deleted
    assert deletes_in_use(UTF8.replace("import os\n\n\n", ""), UTF8, "python")
    assert not deletes_in_use(UTF8, "from __future__ import annotations\n" + UTF8, "python")


APP = """import { useState } from "react";
import { fetchUsers } from "./api";

interface Props {
  size: number;
}

export function App({ size }: Props) {
  const [users, setUsers] = useState([]);
  const [page, setPage] = useState(0);
  fetchUsers(page, size).then(setUsers);
  return <ul>{users.map((u) => <li key={u.id}>{u.name}</li>)}</ul>;
}

export default App;
"""


def test_a_snippet_that_leaves_out_the_code_around_it_keeps_it_where_deleting_it_would_unbind_a_name():
    """A snippet says what it leaves out at the file's edges: with no marker above (below) it, the code
    there is deleted. An agent's snippet of a function, markers inside it, that starts at the function's
    line means the imports above kept where the code it keeps uses them (deleted, `useState` and
    `fetchUsers` would be names no line binds): that reading is the merge, certain, and the code below it
    is unsaid too (`main` kept). Where deleting leaves no name unbound, the snippet's own reading holds
    (`from __future__ ...` deleted; a file's last function deleted: not certain, as before)."""
    snippet = ("export function App({ size }: Props) {\n  const [users, setUsers] = useState([]);\n"
               "  const [page, setPage] = useState(1);\n  // ... existing code ...\n}\n")
    outcome = resolve_edit(APP, snippet, "typescript", "merge")
    assert (outcome.text, outcome.merge.confidence) == (APP.replace("useState(0)", "useState(1)"), "certain")
    assert merge_edit(APP, snippet, "typescript").confidence == "likely"  # read as written: 5 lines deleted
    assert resolve_edit(STORE, SNIPPET, "python", "merge").text == UTF8  # `os.path` keeps `import os`
    future = "from __future__ import annotations\n" + STORE
    assert resolve_edit(future, "import os\n\n\n" + SNIPPET, "python", "merge").text == UTF8
    main = "\n\ndef main():\n    print(Store('.').load('a'))\n"  # unsaid below as `import os` is above
    merged = merge_reading(STORE + main, read_edit(STORE + main, SNIPPET, "python"), "python")
    assert (merged.confidence, merged.text) == ("certain", UTF8 + main)
    method = "    def drop(self, name):\n        os.remove(self.path(name))\n"  # a new last method, no marker below
    merged = merge_reading(STORE + main, read_edit(STORE + main, SNIPPET + "\n" + method, "python"), "python")
    assert (merged.confidence, merged.text) == ("certain", UTF8 + "\n" + method + main)
    append = "# ... existing code ...\n\n\ndef drop(name):\n    os.remove(name)\n"  # new code alone: at the end
    merged = merge_reading(STORE, read_edit(STORE, f"Add:\n\n```python\n{append}```\n", "python"), "python")
    assert (merged.confidence, merged.text) == ("likely", STORE + append.removeprefix("# ... existing code ...\n"))
    merged = merge_reading(RUST, read_edit(RUST, IMPL, "rust"), "rust")  # its `}` is the file's last line too
    assert (merged.confidence, merged.text) == ("certain", RUST_MERGED), merged.reasons
    go = ("package main\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n)\n\ntype Server struct {\n\taddr string\n}\n\n"
          "func (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != \"GET\" {\n\t\treturn\n"
          "\t}\n\tfmt.Fprintf(w, \"hello from %s\\n\", s.addr)\n}\n")
    shown = ("func (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n\t// ... existing code ...\n"
             "\tfmt.Fprintf(w, \"hello from %s!\\n\", s.addr)\n}\n")  # much like the line kept: a doubt of its own
    merged = merge_reading(go, read_edit(go, shown, "go"), "go")
    assert merged.confidence == "likely" and merged.text.startswith("package main\n\nimport (")  # the model's draft
    c = ("/* Copyright */\n#include <stdio.h>\n\nint count(void) {\n    return 1;\n}\n\n"
         "int reset(void) {\n    puts(\"r\");\n    return 0;\n}\n")
    shown = "int reset(void) {\n    // ... existing code ...\n    fflush(stdout);\n    return 0;\n}\n"  # `#include`'s
    merged = merge_reading(c, read_edit(c, shown, "c"), "c")  # names are not told: deleting every one is no edit
    flushed = c.replace("    return 0;", "    fflush(stdout);\n    return 0;")
    assert (merged.confidence, merged.text) == ("certain", flushed), merged.reasons
    tail = "\n\ndef main():\n    pass\n"  # nothing above it unsaid: the snippet from the file's first line deletes it
    merged = merge_reading(STORE + tail, read_edit(STORE + tail, "import os\n\n\n" + SNIPPET, "python"), "python")
    assert (merged.confidence, merged.text) == ("likely", UTF8)  # the last definition deleted: a doubt, as ever


@pytest.mark.parametrize("head", [
    "```python:src/calc.py", "```src/calc.py", "```python src/calc.py", '```python title="src/calc.py"',
    "```12:15:src/calc.py", "src/calc.py\n```python", "**src/calc.py**\n```python", "### `src/calc.py`\n```python",
    "File: src/calc.py\n```python", "Update `src/calc.py` as follows:\n\n```python",
])
def test_the_ways_an_answer_names_a_blocks_file(head):
    assert [block.path for block in code_blocks(f"Here:\n\n{head}\nx = 1\n```\n")[0]] == ["src/calc.py"]


@pytest.mark.parametrize("label", ["# src/calc.py", "// src/calc.py", "-- src/calc.py", "/* src/calc.py */",
                                   "<!-- src/calc.py -->", "# File: src/calc.py"])
def test_a_comment_naming_its_file_on_a_blocks_first_line_names_it_and_is_not_code(label):
    [block] = code_blocks(f"Here:\n\n```\n{label}\nx = 1\n```\n")[0]
    assert (block.path, block.body, block.label) == ("src/calc.py", "x = 1\n", label)


def test_a_labelled_block_keeps_the_file_head_and_a_file_whose_first_line_is_the_label_keeps_it():
    answer = f"Here:\n\n```python\n# store.py\n{SNIPPET}```\n"  # the label is no line of the file: dropped
    assert resolve_edit(STORE, answer, "python", "merge", path="store.py").text == UTF8
    headed = "# store.py\n" + STORE  # the file's own first line is that comment: it is the block's code
    assert answer_edit(f"Here:\n\n```python\n# store.py\nimport os\n```\n", headed, "python")[0] == (
        "# store.py\nimport os\n")


@pytest.mark.parametrize("head", ["```python", "Here are `area` and `calc.py`\n```python", "```python:calc"])
def test_what_names_no_file(head):
    assert [block.path for block in code_blocks(f"{head}\nx = 1\n```\n")[0]] == [None]


def test_blocks_name_their_files_and_each_file_takes_its_own(tmp_path, monkeypatch):
    answer = (f"Update `store.py`:\n\n```python\n{SNIPPET}```\n\nand\n\n"
              "```python:src/calc.py\ndef area(r):\n    return math.pi * r * r\n```\n")
    assert [b.path for b in code_blocks(answer)[0]] == ["store.py", "src/calc.py"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "store.py").write_text(STORE)
    (tmp_path / "src" / "calc.py").write_text(CALC)
    (tmp_path / "other.py").write_text(CALC)
    (tmp_path / "answer.md").write_text(answer)
    result = runner.invoke(app, ["store.py", "--edit-file", "answer.md", "--engine", "merge", "--in-place"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "store.py").read_text() == UTF8
    result = runner.invoke(app, ["other.py", "--edit-file", "answer.md", "--engine", "merge"])
    assert result.exit_code == 2 and "are for store.py, src/calc.py, not other.py" in result.stderr
    result = runner.invoke(app, ["-", "--edit-file", "answer.md", "--engine", "merge", "--language", "python"],
                           input=CALC)
    assert result.exit_code == 2 and "fastapply batch --answer" in result.stderr

    (tmp_path / "store.py").write_text(STORE)
    result = runner.invoke(app, ["batch", "--answer", "answer.md", "--engine", "merge", "--in-place"])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["line"], r["file"], r["ok"]) for r in records] == [(3, "store.py", True), (13, "src/calc.py", True)]
    assert (tmp_path / "store.py").read_text() == UTF8
    assert (tmp_path / "src" / "calc.py").read_text() == "def area(r):\n    return math.pi * r * r\n"
    result = runner.invoke(app, ["batch", "--answer", "--patch", "answer.md"])
    assert result.exit_code == 2 and "choose one of --patch, --answer and --calls" in result.stderr
    with pytest.raises(UsageError, match="names no file"):
        split_answer("```python\nx = 1\n```\n")


def test_blocks_that_name_no_file_are_taken_in_the_files_language_and_joined():
    answer = ("First:\n\n```bash\npip install store\n```\n\nThen `path`:\n\n```py\n    def path(self, name):\n"
              "        return os.path.join(self.root, name.lower())\n    # ... existing code ...\n```\n\n"
              "and `load`:\n\n"
              f"```python\n{SNIPPET.split(chr(10), 2)[2]}```\n")
    both = UTF8.replace("join(self.root, name)", "join(self.root, name.lower())")
    assert resolve_edit(STORE, answer, "python", "merge").text == both
    with pytest.raises(UsageError, match=r"other languages \(bash\)"):
        answer_edit("Run:\n\n```bash\npip install store\n```\n", STORE, "python")


def test_what_is_not_an_answer_is_the_edit_as_it_is():
    docstring = 'def show():\n    """Show it.\n\n```python\nshow()\n```\n    """\n    # ... existing code ...\n'
    assert answer_edit(docstring, STORE, "python") is None  # a snippet holding a fenced block of its own
    around = "import os\n\n```python\nx = 1\n```\n"  # a line outside the block is the file's
    assert answer_edit(around, STORE, "python") is None
    literal = "const doc = `\n```js\nshow();\n```\n`;\n"  # code around the block: a template literal
    assert answer_edit(literal, "function show() {}\n", "javascript") is None
    words = "Add `hide` = the opposite; it is short:\n\n```js\nfunction hide() {}\n```\n"  # words, `;` and all
    assert answer_edit(words, "function show() {}\n", "javascript") == ("function hide() {}\n",) * 2
    readme = "# Store\n\n```python\nStore('.').load('a')\n```\n"  # a file with fences of its own
    assert answer_edit("Add:\n\n```python\nx = 1\n```\n", readme, "markdown") is None
    assert answer_edit("x = 1\n", STORE, "python") is None
    unclosed = "```python\nx = 1\n"
    assert code_blocks(unclosed)[0] == []
    nested = "````markdown\n```python\nx = 1\n```\n````\n"  # a longer fence holds a shorter one
    assert [b.body for b in code_blocks(nested)[0]] == ["```python\nx = 1\n```\n"]


def test_a_code_file_with_fences_of_its_own_takes_an_answer_whose_block_holds_bare_fences():
    """type-fest writes JSDoc examples between bare fences at column 0: the file holds fences, and so does
    the answer's block; its words around are still words, and the block is read whole."""
    doc = "/**\nA value.\n\n@example\n```\nconst x: Value = 1;\n```\n*/\nexport type Value = number;\n"
    block = doc.replace("= number;", "= number | bigint;")
    answer = f"Widen it:\n\n```ts\n{block}```\n\nThat is all.\n"
    assert [b.body for b in code_blocks(answer, greedy=True)[0]] == [block]
    assert answer_edit(answer, doc, "typescript") == (block, block)
    assert resolve_edit(doc, answer, "typescript", "merge").text == block


README = ("# Store\n\nA tiny store.\n\n## Install\n\n```bash\npip install store\n```\n\n"
          "## Usage\n\n```python\nStore('.').load('a')\n```\n\n## License\n\nMIT\n")


def test_a_markdown_file_with_fences_takes_an_answer_whose_block_names_it_or_has_a_longer_fence(tmp_path, monkeypatch):
    """A README holds fences of its own, so a snippet of it may too; a chat answer is still told apart where
    its block names the file or opens with more backticks than any fence the file holds."""
    section = "## Install\n\n```bash\npip install store\n```\n\n## Quick start\n\n```bash\nstore init .\n```\n\n"
    longer = f"Here is the section:\n\n````markdown\n{section}## Usage\n````\n\nThat is all.\n"
    expected = README.replace("## Usage", "## Quick start\n\n```bash\nstore init .\n```\n\n## Usage")
    assert answer_edit(longer, README, "markdown") is not None
    assert resolve_edit(README, longer, "markdown", "merge").text == expected
    named = "Update `README.md`:\n\n```markdown\nA tiny store, kept on disk.\n```\n"
    assert answer_edit(named, README, "markdown") is None  # no path given: the block may be the snippet's own
    assert answer_edit(named, README, "markdown", "README.md") == ("A tiny store, kept on disk.\n",) * 2
    assert answer_edit(named, README, "markdown", "CHANGES.md") is None  # another file named: it may be an example
    plain = "Add:\n\n```python\nx = 1\n```\n"  # three backticks, no name: a snippet's own fence
    assert answer_edit(plain, README, "markdown", "README.md") is None
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text(README)
    (tmp_path / "answer.md").write_text(longer.replace("````markdown", "````markdown:README.md"))
    result = runner.invoke(app, ["batch", "--answer", "answer.md", "--engine", "merge", "--in-place"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "README.md").read_text() == expected


def test_a_diff_in_an_answer_and_a_diff_of_several_files_in_one(tmp_path, monkeypatch):
    hunk = "@@\n def area(r):\n-    return 3.14 * r * r\n+    return math.pi * r * r\n"
    assert resolve_edit(CALC, f"Use pi:\n\n```diff\n{hunk}```\n", "python", "merge").text == CALC.replace(
        "3.14", "math.pi")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(CALC)
    (tmp_path / "b.py").write_text(CALC)
    diff = "".join(f"--- a/{name}\n+++ b/{name}\n{hunk}" for name in ("a.py", "b.py"))
    (tmp_path / "answer.md").write_text(f"Both files:\n\n```diff\n{diff}```\n")
    result = runner.invoke(app, ["a.py", "--edit-file", "answer.md", "--engine", "merge"])
    assert result.exit_code == 0 and result.stdout == CALC.replace("3.14", "math.pi")
    result = runner.invoke(app, ["batch", "--patch", "answer.md", "--engine", "merge", "--in-place"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "b.py").read_text() == CALC.replace("3.14", "math.pi")


def test_a_definition_added_at_the_end_with_no_marker_after_drafts_the_file_with_its_last_lines_kept():
    """An agent's snippet that ends with a new definition, no marker after it, deletes the file's last lines as
    written, a doubt (``lost.tail_still_wired``): the model's draft is the file with them kept, likely,
    where that merge is certain (not written unasked: a new definition may be the last one renamed)."""
    original = "export type Name<T> =\n\tT extends string\n\t\t? T\n\t\t: never;\n\nexport {};\n"
    other = "export type Other<T> =\n\tT extends number\n\t\t? T\n\t\t: never;\n"
    update = "// ... existing code ...\n\t\t? T\n\t\t: never;\n\n" + other
    merged = merge_reading(original, read_edit(original, update, "typescript"), "typescript")
    assert merged.text == original.replace("\nexport {};", "\n" + other + "\nexport {};")
    assert merged.confidence == "likely" and "'export {};'" in merged.reasons[0]

