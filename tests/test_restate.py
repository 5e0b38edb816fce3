"""A store the snippet shows changed right beside a lazy marker (``fastapply.restate``): ``limit = 20``
then ``# ... existing code ...`` takes the place of the ``limit = 10`` the marker would keep."""

from __future__ import annotations

import pytest

from fastapply.merge import merge

PY = """import os


def main():
    root = os.getcwd()
    limit = 10
    for name in os.listdir(root):
        print(name)
    return limit
"""
SPACED = PY.replace("    limit = 10\n", "\n    limit = 10\n\n")  # blank lines around the store
TS = """import { useState } from "react";

export function App() {
  const [users, setUsers] = useState([]);
  const [page, setPage] = useState(0);
  const size = 20; // rows a page
  return <ul>{users.length}</ul>;
}
"""
GO = """package main

func main() {
\tname := "a"
\tlimit := 10
\tprintln(name, limit)
}
"""
C = """int main(void) {
    int total = 0;
    int limit = 10; /* rows */
    return total + limit;
}
"""


@pytest.mark.parametrize("original, update, expected", [
    (PY, "# ... existing code ...\n    root = os.getcwd()\n    limit = 20\n    # ... existing code ...\n",
     PY.replace("limit = 10", "limit = 20")),
    (PY, "# ... existing code ...\n    limit = 20\n    for name in os.listdir(root):\n# ... existing code ...\n",
     PY.replace("limit = 10", "limit = 20")),  # the marker above keeps `limit = 10`: the shown line replaces it
    (TS, "// ... existing code ...\n  const [users, setUsers] = useState([]);\n  const [page, setPage] = useState(1);\n"
         "  // ... existing code ...\n", TS.replace("useState(0)", "useState(1)")),
    (TS, "// ... existing code ...\n  const [page, setPage] = useState(0);\n  const size = 50; // rows a page\n"
         "  // ... existing code ...\n", TS.replace("size = 20", "size = 50")),
    (GO, "// ... existing code ...\n\tname := \"a\"\n\tlimit := 5\n\t// ... existing code ...\n",
     GO.replace("10", "5")),
    (C, "/* ... existing code ... */\n    int total = 0;\n    int limit = 12;\n    /* ... existing code ... */\n",
     C.replace("int limit = 10; /* rows */", "int limit = 12;")),
    (SPACED, "# ... existing code ...\n    root = os.getcwd()\n\n    limit = 20\n    # ... existing code ...\n",
     SPACED.replace("limit = 10", "limit = 20")),  # anchored on the blank line, the store's doubt settled
    (SPACED, "# ... existing code ...\n    limit = 20\n\n    for name in os.listdir(root):\n# ... existing code ...\n",
     SPACED.replace("limit = 10", "limit = 20")),
])
def test_a_store_shown_changed_beside_a_marker_takes_the_place_of_the_one_it_keeps(original, update, expected):
    """Read as an insertion, one of the two stores would be overwritten before anything reads it (in
    TypeScript and Go, a name declared twice): the snippet shows the line changed. Certain, and exact."""
    merged = merge(original, update, {PY: "python", SPACED: "python", TS: "tsx", GO: "go", C: "c"}[original])
    assert (merged.confidence, merged.text) == ("certain", expected), merged.reasons


@pytest.mark.parametrize("update, expected", [
    ("    max_items = 20\n", PY.replace("    limit = 10\n", "    max_items = 20\n    limit = 10\n")),  # another name
    ("    limit: int = 20\n", PY.replace("    limit = 10\n", "    limit: int = 20\n    limit = 10\n")),  # not alike
    ("    print(limit)\n", PY.replace("    limit = 10\n", "    print(limit)\n    limit = 10\n")),  # no store
])
def test_a_new_line_beside_a_marker_that_restates_no_store_is_inserted(update, expected):
    merged = merge(PY, "# ... existing code ...\n    root = os.getcwd()\n" + update + "    # ... existing code ...\n",
                   "python")
    assert (merged.confidence, merged.text) == ("certain", expected), merged.reasons


@pytest.mark.parametrize("line", ["    limit = limit * 2\n", "    limit = 10 if root else limit\n",
                                  '    limit = f"{limit}s"\n'])  # a name inside an f-string is read too
def test_a_store_that_reads_its_own_target_beside_the_kept_one_is_not_certain(line):
    """`limit = limit * 2` above the `limit = 10` a marker keeps may be new (then `limit = 10` overwrites
    it, which its writer may not see) or the line changed: a doubt, the model decides."""
    merged = merge(PY, "# ... existing code ...\n    root = os.getcwd()\n" + line + "    # ... existing code ...\n",
                   "python")
    assert merged.confidence == "likely" and "stores to limit" in merged.reasons[0], merged.reasons


def test_a_member_or_a_string_is_no_read_of_the_target():
    """`req.params.format` reads no `format`, nor does `"out"` read `out`: the kept line is replaced."""
    js = "function f(req, dir) {\n  var a = 1;\n  var format = req.params.format;\n  var out = dir + \"/out\";\n}\n"
    shown = "// ... existing code ...\n  var a = 1;\n  var format = req.params.format || 'json';\n  // ...\n"
    assert merge(js, shown, "javascript").text == js.replace(".format;", ".format || 'json';")
    shown = "// ...\n  var out = dir + \"/out2\";\n}\n"
    assert merge(js, "// ...\n  var format = req.params.format;\n  var out = dir + \"/out2\";\n}\n",
                 "javascript").text == js.replace("/out\"", "/out2\"")


def test_a_configuration_file_keeps_its_own_rule():
    """YAML, TOML, JSON and CSS are ``keymerge.set_in_place``'s; a file of no known language may hold a
    key twice (systemd's `After=`), so nothing there is restated."""
    unit = "[Unit]\nDescription=x\nAfter=network.target\nAfter=sshd.service\n"
    merged = merge(unit, "# ...\nDescription=x\nAfter=local-fs.target\n# ...\n", None)
    assert merged.text == unit.replace("Description=x\n", "Description=x\nAfter=local-fs.target\n")


def test_the_only_doubtless_reading_of_a_repeated_anchor_is_not_one_that_anchors_fewer_lines():
    """`return NULL;` / `}` / `self->pos = 0;` then `input = buf2;`: the five-line run anchors where
    `input = buf;` follows (the line changed), the two-line one at the end of another function, where the
    shown lines would be new; taken there as the only reading without a doubt, the edit went into the wrong
    function, certain. Only readings anchoring as many lines may settle it: not certain now (the five-line
    run ends on a blank line, so its new line may replace the code after it), the candidate right."""
    c = ("int f(S *self) {\n    if (!self)\n        return NULL;\n    }\n\n    self->pos = 0;\n\n    input = buf;\n"
         "    size = len;\n}\n\nint g(void) {\n    if (h())\n        return NULL;\n    }\n}\n")
    update = ("        // ... existing code ...\n        return NULL;\n    }\n\n    self->pos = 0;\n\n"
              "    input = buf2;\n    // ... existing code ...\n")
    merged = merge(c, update, "c")
    assert (merged.confidence, merged.text) == ("likely", c.replace("buf;", "buf2;")), merged.reasons


def test_the_only_doubtless_reading_is_not_certain_where_another_changes_one_line_for_the_new_one():
    """`audit_log.append(self.name)` shown between `return` and `self.fetch()`: in `load` those meet and it
    is inserted, with no doubt; in `save` it takes `self.flush()`'s place, doubted only for that. The one
    doubtless reading was certain; a line changed for another is as likely (``merge_bench.py --functions``
    and ``--imports``, a changed line under a `try:`, a `return`, a docstring's line), a doubt."""
    original = ("class Store:\n    def load(self):\n        if not self.ready:\n            return\n"
                "        self.fetch()\n        self.done = True\n\n    def save(self):\n        if not self.ready:\n"
                "            return\n        self.flush()\n        self.fetch()\n        self.done = True\n")
    update = ("    # ... existing code ...\n            return\n        audit_log.append(self.name)\n"
              "        self.fetch()\n    # ... existing code ...\n")
    merged = merge(original, update, "python")
    assert (merged.confidence, merged.reasons) == ("likely", ("segment 1: its anchor 'self.fetch()' appears 2 times",))


@pytest.mark.parametrize("update", [
    "# ... existing code ...\n        print(name)\n    return limit + 1\n    # ... existing code ...\n",
    "# ... existing code ...\n        print(name)\n    return (limit)\n    # ... existing code ...\n",
])
def test_a_new_line_beside_a_marker_much_like_the_line_it_keeps_is_not_certain(update):
    """`return limit + 1` then a marker: read as an insertion, the old `return limit` stayed after it
    (here unreachable; `fmt.Fprintf(w, "hello %s (%s)\\n", ...)` above the old `Fprintf` printed twice),
    certain. A line this alike the one the marker keeps may be that line changed or a copy added: a doubt,
    the model decides (`--engine merge` refuses)."""
    merged = merge(PY, update, "python")
    assert merged.confidence == "likely" and "is much like the line 'return limit'" in merged.reasons[0], merged.reasons


@pytest.mark.parametrize("language, original, update, expected", [
    ("javascript", "function load(req, next) {\n  req.user = user;\n  next();\n  audit(req);\n}\n",
     "// ... existing code ...\n  req.user = user;\n  next(); // hand on\n  // ... existing code ...\n",
     "function load(req, next) {\n  req.user = user;\n  next(); // hand on\n  audit(req);\n}\n"),
    ("python", PY, "# ... existing code ...\n    root = os.getcwd()\n    limit = 10  # rows\n"
                   "    # ... existing code ...\n", PY.replace("limit = 10", "limit = 10  # rows")),
])
def test_a_statement_shown_with_its_comment_changed_beside_a_marker_is_that_line_edited(language, original, update,
                                                                                        expected):
    """`next(); // hand on` above the `next();` a marker keeps: read as an insertion, `next()` ran twice
    (certain). The same statement, its comment added or changed, is the line edited."""
    merged = merge(original, update, language)
    assert (merged.confidence, merged.text) == ("certain", expected), merged.reasons


def test_a_comment_shown_with_a_number_changed_beside_a_marker_is_not_certain():
    """`# Work around mypy issue #4555` under the `# ... issue #4554` a marker keeps (attrs' `Factory`): the
    text before ` #` was read as a statement whose comment changed, the line edited, certain; a copy added
    was meant. A line of comment alone is no statement: much like the kept one, it may be either, a doubt."""
    original = ("# NOTE: Factory lies about its return type.\n# Work around mypy issue #4554 with an overload.\n\n"
                "@overload\ndef Factory(factory): ...\n")
    update = ("# ... existing code ...\n# Work around mypy issue #4555 with an overload.\n\n@overload\n"
              "def Factory(factory): ...\n# ... existing code ...\n")
    merged = merge(original, update, "python")

    assert merged.confidence == "likely" and any("is much like the line" in why for why in merged.reasons), \
        merged.reasons
