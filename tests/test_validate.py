"""validate(): planted problems are caught, clean edits pass."""

import textwrap

from fastapply.markers import is_marker_text
from fastapply.segments import is_trivial
from fastapply.tasks import load_tasks
from fastapply.deletions import kept_by_markers, marker_deletions
from fastapply.validate import RefusalWatch, validate
from tests.evaltasks import SUITE, suite_task

ORIGINAL = textwrap.dedent('''\
    import os


    def load(path):
        with open(path) as f:
            return f.read()


    def save(path, text):
        with open(path, "w") as f:
            f.write(text)


    def main():
        print(load("a.txt"))
    ''')
UPDATE = "# ... existing code ...\ndef main():\n    print(load('b.txt'))\n"
CLEAN = ORIGINAL.replace('load("a.txt")', "load('b.txt')")


def names(problems):
    return [p.name for p in problems]


def test_clean_edit_passes():
    assert validate(ORIGINAL, CLEAN, UPDATE, "python") == ()


def test_markers_left_are_caught():
    output = CLEAN.replace("def save", "# ... existing code ...\n\n\ndef save")
    assert names(validate(ORIGINAL, output, UPDATE, "python")) == ["markers-left"]


def test_markers_the_original_had_are_not_problems():
    original = ORIGINAL + "# ... existing code ...\n"
    assert validate(original, CLEAN + "# ... existing code ...\n", UPDATE, "python") == ()


def test_unclosed_answer_is_truncated():
    assert "truncated" in names(validate(ORIGINAL, CLEAN, UPDATE, "python", closed=False))


def test_file_ending_mid_construct_is_truncated():
    cut = CLEAN[: CLEAN.index("print(")] + "print(load("
    assert names(validate(ORIGINAL, cut, UPDATE, "python"))[:1] == ["truncated"]
    cut = CLEAN[: CLEAN.index("    print(")]  # ends with "def main():"
    assert "truncated" in names(validate(ORIGINAL, cut, UPDATE, "python"))
    js = "function f() {\n  return 1;\n}\n"
    assert "truncated" in names(validate(js, "function f() {\n  return 2;\n", "return 2;", "javascript"))


def test_broken_syntax_is_caught():
    output = CLEAN.replace("def save(path, text):", "def save(path, text:")
    assert "syntax-errors" in names(validate(ORIGINAL, output, UPDATE, "python"))


def test_deletion_far_from_the_edit_is_caught():
    output = CLEAN.replace('def load(path):\n    with open(path) as f:\n        return f.read()\n\n\n', "")
    problems = validate(ORIGINAL, output, UPDATE, "python")
    assert names(problems) == ["unrelated-deletion"]
    assert "lines 4-6" in problems[0].message


def test_deletion_inside_the_edited_function_is_fine():
    output = ORIGINAL.replace('def main():\n    print(load("a.txt"))\n', "def main():\n    pass\n")
    assert validate(ORIGINAL, output, "# ... existing code ...\ndef main():\n    pass\n", "python") == ()


def test_deletion_the_update_asks_for_is_fine():
    output = ORIGINAL.replace('def save(path, text):\n    with open(path, "w") as f:\n        f.write(text)\n\n\n', "")
    update = 'Remove the save function.\n# ... existing code ...\ndef main():\n    print(load("a.txt"))\n'
    assert validate(ORIGINAL, output, update, "python") == ()


def test_unknown_language_checks_markers_and_truncation_only():
    assert validate("a: 1\n", "a: 2\n", "a: 2", None) == ()
    assert names(validate("a: 1\n", "a: 2\n# ...\n", "a: 2", None)) == ["markers-left"]


def test_deletion_by_omission_between_shown_lines_is_fine():
    original = "def a():\n    return 1\n\n\n" + "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(8)) + \
        "def z():\n    return 26\n"
    output = "def a():\n    return 1\n\n\ndef z():\n    return 26\n"
    update = "def a():\n    return 1\n\n\ndef z():\n    return 26\n"
    assert validate(original, output, update, "python") == ()
    assert names(validate(original, output, "# ... existing code ...\ndef z():\n    return 26\n", "python")) == [
        "unrelated-deletion"]


def test_lines_a_marker_keeps_are_not_left_out_through_a_repeated_line():
    """The update shows `#[cfg]` next to `pub use macos`, as the original has them at its end; an output
    that drops everything between the first `#[cfg]` and that line deleted what the marker keeps."""
    original = ("mod audit;\n#[cfg(feature = \"x\")]\nmod linux;\n" + "".join(f"mod m{i};\n" for i in range(12))
                + "#[cfg(feature = \"x\")]\npub use macos::Repairer;\npub use tag::Tag;\npub use policy::Policy;\n")
    update = ("// ... rest of code ...\n#[cfg(feature = \"x\")]\npub use macos::Repairer;\npub use tag::{Compat, Tag};\n"
              "pub use policy::Policy;\n")
    right = original.replace("pub use tag::Tag;", "pub use tag::{Compat, Tag};")
    wrong = "mod audit;\n#[cfg(feature = \"x\")]\n" + right.split("#[cfg(feature = \"x\")]\n")[-1]
    assert validate(original, right, update, "rust") == ()
    assert names(validate(original, wrong, update, "rust")) == ["unrelated-deletion"]


def test_a_deletion_the_instruction_names_is_fine_with_its_comments():
    original = ("def a():\n    return 1\n\n\n# Helper for b.\n# It returns two.\ndef b():\n    x = 2\n    y = x\n"
                "    z = y\n    return z\n\n\ndef c():\n    return 3\n")
    output = "def a():\n    return 1\n\n\ndef c():\n    return 4\n"
    update = "# ... existing code ...\ndef c():\n    return 4\n"
    assert names(validate(original, output, update, "python")) == ["unrelated-deletion"]
    assert validate(original, output, update, "python", instruction="Delete the function `b`.") == ()


JS = '''\
const fs = require("fs");

function readJson(path) {
  return JSON.parse(fs.readFileSync(path, "utf8"));
}

function writeJson(path, data) {
  fs.writeFileSync(path, JSON.stringify(data, null, 2));
}

module.exports = { readJson, writeJson };
'''
JS_UPDATE = '''\
// ... existing code ...
function writeJson(path, data) {
  fs.writeFileSync(path, JSON.stringify(data, null, 2));
}

function jsonExists(path) {
  return fs.existsSync(path);
}

module.exports = { readJson, writeJson, jsonExists };
'''
JS_EXPECTED = JS.replace("module.exports = { readJson, writeJson };\n", JS_UPDATE.split("\n", 1)[1])


def test_a_line_the_snippet_keeps_but_the_output_drops_is_edit_not_applied():
    assert validate(JS, JS_EXPECTED, JS_UPDATE, "javascript") == ()
    # fastapply-small once wrote jsonExists in writeJson's place: every new line is there, the kept ones are not
    dropped = JS_EXPECTED.replace('function writeJson(path, data) {\n  fs.writeFileSync(path, JSON.stringify(data, '
                                  'null, 2));\n}\n\n', "")
    problems = validate(JS, dropped, JS_UPDATE, "javascript")
    assert names(problems) == ["edit-not-applied"]
    assert "the update keeps" in problems[0].message and "function writeJson" in problems[0].message


FLIP = ("import TempNode from './TempNode.js';\nimport { vec } from './constants.js';\n\n" +
        "".join(f"const value{i} = {i};\n" for i in range(12)) +
        "/**\n * @augments TempNode\n */\nclass FlipNode extends TempNode {\n}\n")
FLIP_UPDATE = ("import Node from './Node.js';\nimport { vec } from './constants.js';\n// ... existing code ...\n" +
               " * @augments Node\n */\nclass FlipNode extends Node {\n// ... existing code ...\n")


def test_lines_replaced_by_the_lines_the_update_shows_are_the_edit():
    """The update's short context lines (` */`) anchor nothing, so the replaced lines are far from every
    anchor; but each gave way to a line the update shows, one for one: that is the edit."""
    output = FLIP.replace("TempNode from './TempNode.js'", "Node from './Node.js'").replace("TempNode", "Node")
    assert validate(FLIP, output, FLIP_UPDATE, "javascript") == ()


def test_a_far_line_replaced_by_one_the_update_does_not_show_is_still_caught():
    output = (FLIP.replace("TempNode from './TempNode.js'", "Node from './Node.js'").replace("TempNode", "Node")
              .replace("const value7 = 7;", "const value7 = 70;"))
    assert names(validate(FLIP, output, FLIP_UPDATE, "javascript")) == ["unrelated-deletion", "unasked-change"]


DOCSTRING = textwrap.dedent('''\
    import os


    def split(nodeid):
        """Determine the scope of a nodeid.

        There are usually 3 cases::

            a.py::test_a
            b.py::B::test_b

        With groups, two more.
        """
        return nodeid.split("::")[0]
    ''')
DOCSTRING_UPDATE = '# ... existing code ...\n\ndef split(nodeid: str) -> str:\n    """Determine the scope of a nodeid.\n' \
                   '    # ... existing code ...\n'


def test_lines_a_closing_marker_keeps_are_not_dropped_next_to_the_edit():
    """The marker after the docstring's first line keeps the rest of the file; an answer that drops lines
    just after it (inside the definition the edit touches) deletes what the marker keeps."""
    right = DOCSTRING.replace("def split(nodeid):", "def split(nodeid: str) -> str:")
    wrong = right.replace("\n    There are usually 3 cases::\n\n        a.py::test_a\n", "\n")
    assert validate(DOCSTRING, right, DOCSTRING_UPDATE, "python") == ()
    problems = validate(DOCSTRING, wrong, DOCSTRING_UPDATE, "python")
    assert names(problems) == ["unrelated-deletion"]
    assert "that a lazy marker of the update keeps" in problems[0].message


def test_a_marker_keeps_lines_changed_in_place_and_deletions_the_instruction_names():
    """Only a net loss of lines counts against a marker, and not inside a definition the instruction asks
    to delete."""
    update = "def a(x):\n    return x\n# ... existing code ...\n"
    original = "def a():\n    return x\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"
    changed = original.replace("def a():", "def a(x):").replace("return 3", "return 30")
    assert marker_deletions(original, changed, update, "python") == []
    dropped = original.replace("def a():", "def a(x):").replace("def b():\n    return 2\n\n\n", "")
    assert marker_deletions(original, dropped, update, "python") == [4, 5]
    assert marker_deletions(original, dropped, update, "python", "Remove the function `b`.") == []


def test_a_marker_between_repeated_lines_keeps_nothing_certain():
    """A marker whose neighbours both occur more than once in the original does not say which lines it
    keeps."""
    original = "x = 1\ny = 2\nx = 1\nz = 3\nz = 3\n"
    assert kept_by_markers(original, "x = 1\n# ...\nz = 3\n", "python") == set()
    assert kept_by_markers(original, "y = 2\n# ...\nx = 1\n", "python") == set()


def test_a_marker_next_to_a_repeated_line_keeps_the_lines_from_its_nearest_copy():
    """A marker after a decorator the file has twice, before a line it has once: whichever copy the
    snippet means, the marker keeps the lines between the second copy and that line, and an answer that
    joins the first function's head to the second's tail deletes them (the shape of cramjam
    ``test_rust_io.py``). The mirror case keeps the lines up to the nearest copy below."""
    original = textwrap.dedent('''\
        import pytest


        @pytest.mark.parametrize("n", (1, 2))
        def test_one(n):
            assert n

            assert n > 0


        @pytest.mark.parametrize("n", (1, 2))
        def test_two(n):
            m = n * 2

            assert m > n
        ''')
    added = "\n\ndef test_three():\n    assert True\n"
    update = ('import pytest\n\n\n@pytest.mark.parametrize("n", (1, 2))\n# ... existing code ...\n\n'
              '    assert m > n\n' + added)
    assert kept_by_markers(original, update, "python") == {11, 12}
    right = original + added
    assert validate(original, right, update, "python") == ()
    joined = original.split("\n\n    assert n > 0")[0] + "\n\n    assert m > n\n" + added
    problems = validate(original, joined, update, "python")
    assert names(problems) == ["unrelated-deletion"]
    assert "that a lazy marker of the update keeps" in problems[0].message
    mirror = 'def test_one(n):\n# ... existing code ...\n@pytest.mark.parametrize("n", (1, 2))\n'
    assert kept_by_markers(original, mirror, "python") == {5, 7}


MATH = textwrap.dedent('''\
    export var abs = Math.abs;
    export var pi = Math.PI;
    export var tau = 2 * pi;

    export function acos(x) {
      return x > 1 ? 0 : x < -1 ? pi : Math.acos(x);
    }

    export var halfPi = pi / 2;
    ''')


def test_a_closing_marker_keeps_the_files_end_when_no_line_of_its_segment_anchors():
    """Every line the snippet shows is edited, so none pins the marker's reach down; the marker that
    closes it still stands for the file's last line, and an answer that drops the code there deletes
    what it keeps. A snippet that shows that line, edited, keeps nothing past it."""
    update = "export const abs = Math.abs;\nexport const pi = Math.PI;\nexport const tau = 2 * pi;\n\n// ... existing code ...\n"
    right = MATH.replace("var abs", "const abs").replace("var pi", "const pi").replace("var tau", "const tau")
    wrong = right.split("\n\n")[0] + "\n"
    assert kept_by_markers(MATH, update, "javascript") == {8}
    assert validate(MATH, right, update, "javascript") == ()
    problems = validate(MATH, wrong, update, "javascript")
    assert names(problems) == ["unrelated-deletion"]
    assert "that a lazy marker of the update keeps" in problems[0].message
    shown = "export const abs = Math.abs;\n// ... existing code ...\nexport const halfPi = pi / 2;\n// ... existing code ...\n"
    assert kept_by_markers(MATH, shown, "javascript") == set()


def test_a_marker_before_closing_lines_and_new_code_keeps_what_comes_before_the_files_last_copy():
    """The suite's eventemitter3 `index.d.ts`: the update is a marker, `}`, then `module.exports = ...` in
    place of the two `export` lines after the file's last `}`. A model read the `}` as the class's and
    dropped the `declare namespace` block after it: those lines come before the file's last `}`, which
    the marker keeps. The expected answer passes."""
    task = suite_task("npm-eventemitter3-5.0.2-index.d.ts")
    assert validate(task.original, task.expected, task.update, task.language) == ()
    start = task.expected.index("declare namespace EventEmitter {")
    end = task.expected.index("module.exports")
    wrong = task.expected[:start] + task.expected[end:]
    problems = validate(task.original, wrong, task.update, task.language)
    assert names(problems) == ["unrelated-deletion"]
    assert "that a lazy marker of the update keeps" in problems[0].message


def test_an_answer_equal_to_a_likely_merge_is_checked_like_any_other():
    """Only a certain merge vouches for the deletions of an answer that equals it. The suite's celery
    `couchdb.py`: the update's segment opens with a line found three times in the file and a new
    `try:`; the merge engine's 'likely' reading joins `get`'s first lines to `delete`'s last ones, and
    a model drafting from it wrote that. The lines between are ones the update's marker keeps."""
    from fastapply.merge import merge

    task = suite_task("pypi-celery-5.7.0-celery-backends-couchdb.py")
    candidate = merge(task.original, task.update, task.language)
    assert candidate.confidence == "likely" and candidate.text != task.expected
    problems = validate(task.original, candidate.text, task.update, task.language)
    assert [p.name for p in problems] == ["unrelated-deletion"]
    assert validate(task.original, task.expected, task.update, task.language) == ()


def test_a_change_the_update_does_not_show_is_refused_though_its_lines_are_in_the_file():
    """The suite's redis `test_data_structure.py`: the update adds a decorator and an import near the top
    and keeps the rest with a marker; a model rewrote an assert 20 lines below into a four-item list
    whose lines the file has in other tests. Nothing is deleted outright and no line is new to the file,
    but the update shows none of those lines."""
    task = suite_task("pypi-redis-8.0.0-tests-test_data_structure.py")
    assert validate(task.original, task.expected, task.update, task.language) == ()
    assert_line = '        assert wlist.get_top_n(4) == [("item3", 4.0), ("item1", 3.0)]\n'
    listed = ('        assert wlist.get_top_n(4) == [\n            ("item3", 4.0),\n            ("item4", 4.0),\n'
              '            ("item1", 3.0),\n            ("item2", 2.0),\n        ]\n')
    assert task.expected.count(assert_line) == 1
    wrong = task.expected.replace(assert_line, listed)
    for line in listed.splitlines()[1:-1]:
        assert line + "\n" in task.original  # each line is in the file already
    assert names(validate(task.original, wrong, task.update, task.language)) == ["unasked-change"]


def test_lines_the_update_does_not_show_are_fine_when_an_instruction_asks():
    output = CLEAN + '    print("done")\n'
    assert names(validate(ORIGINAL, output, UPDATE, "python")) == ["unasked-change"]
    assert validate(ORIGINAL, output, UPDATE, "python", instruction="Then print done.") == ()


def test_an_update_without_markers_that_matches_nothing_is_the_whole_file():
    """The suite's d3-selection `sourceEvent.js`: the update has no lazy marker and no line the merge
    engine can place, so it is the new file; a model kept the import it drops. A marker-less update the
    merge engine places (a new version of one function) keeps the rest of the file."""
    task = suite_task("npm-d3-selection-2.0.0-src-sourceEvent.js")
    assert validate(task.original, task.expected, task.update, task.language) == ()
    kept_import = task.original.splitlines(keepends=True)[0] + "\n" + task.expected
    problems = validate(task.original, kept_import, task.update, task.language)
    assert names(problems) == ["unasked-change"] and "import {event}" in problems[0].message
    one_function = "def save(path, text):\n    with open(path, 'a') as f:\n        f.write(text)\n"
    rest_kept = ORIGINAL.replace('with open(path, "w") as f:', "with open(path, 'a') as f:")
    assert validate(ORIGINAL, rest_kept, one_function, "python") == ()


def test_lines_written_more_often_than_original_and_update_hold_them():
    """The suite's jiter `tests/python.rs`, as a model answered it: the snippet's new block written twice,
    and the four tests that the marker between the block's closing brace and the next test keeps dropped.
    No other check sees it (the brace is too common to pin the marker down); the second copy does."""
    task = suite_task("pypi-jiter-0.18.0-crates-jiter-tests-python.rs")
    assert validate(task.original, task.expected, task.update, task.language) == ()
    lines = task.expected.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("/// The string cache is process-global"))
    block = lines[start:lines.index("}", start) + 1]  # the doc comment, the static and cache_lock()
    kept_from = lines.index('#[cfg(feature = "num-bigint")]')
    test = lines.index("fn test_python_parse_default() {")
    answer = "\n".join(lines[:kept_from] + block + [""] + lines[test - 1:])  # the tests between them gone
    problems = validate(task.original, answer, task.update, task.language)
    assert names(problems) == ["unasked-change"] and "more often" in problems[0].message
    assert validate(task.original, answer, task.update, task.language, instruction="Add a cache lock.") == ()


def test_a_watch_names_a_problem_only_where_the_whole_output_is_refused_for_it():
    """RefusalWatch, fed an output's lines in order, finds nothing in any of the suite's 450 expected
    answers; given an answer with three more copies of a line of the update (a model that loops), it
    names a problem at those copies or later only where validate() refuses the whole answer for a change
    not asked for, and so it does for most of them."""
    watched = 0
    for task in load_tasks(SUITE):
        lines = task.expected.split("\n")
        assert RefusalWatch(task.original, task.update, task.language, task.instruction).lines(lines) is None, task.id
        copy = next((line for line in task.update.split("\n")
                     if line in lines and not is_trivial(line) and not is_marker_text(line.strip())), None)
        if copy is None:
            continue
        at = lines.index(copy) + 1
        looping = lines[:at] + [copy] * 3 + lines[at:]
        watch = RefusalWatch(task.original, task.update, task.language, task.instruction)
        found = next((i for i in range(len(looping)) if watch.lines([looping[i]]) is not None), None)
        if found is not None:
            assert found >= at, task.id
            assert "unasked-change" in names(validate(task.original, "\n".join(looping), task.update, task.language,
                                                      instruction=task.instruction)), task.id
            watched += 1
    assert watched > 200


def test_a_watch_waits_for_an_update_that_may_be_prose_and_ignores_an_instruction():
    # no marker and no line of the original: prose, unless the output writes one of its lines
    watch = RefusalWatch("if x:\n    a = 1\n", "if y:\n", "python")
    assert watch.lines(["        a = 1"]) is None  # an original line moved: unshown, if the update is code
    assert watch.lines(["if y:"]).name == "unasked-change" and "'a = 1'" in watch.problem.message
    assert "unasked-change" in names(validate("if x:\n    a = 1\n", "        a = 1\nif y:\n", "if y:\n", "python"))
    assert RefusalWatch("a = 1\n", "Rename a to b.\n", "python").lines(["b = 1"]).name == "unasked-change"
    told = RefusalWatch("a = 1\n", "# ...\nb = 1\n", "python", instruction="Add b and c.")
    assert told.lines(["a = 1", "b = 1", "c = 2", "b = 1", "b = 1"]) is None
    assert validate("a = 1\n", "a = 1\nb = 1\nc = 2\n", "# ...\nb = 1\n", "python", instruction="Add b and c.") == ()


COMPOSE = 'services:\n  web:\n    image: nginx\n    ports:\n      - "80:80"\n  db:\n    image: postgres\n    ports:\n' \
          '      - "5432:5432"\n'
DB_PART = '  db:\n    image: postgres:16\n    ports:\n      - "5432:5432"\n'


def test_an_output_that_is_an_indented_part_alone_deletes_the_rest_of_the_file():
    """fastapply-small, given the ``db`` service of a compose file with no markers, wrote it alone as the
    file: every deleted line is near a line the update repeats in a file this short, so only the update's
    indented first line (a file does not start inside a block) says it is a part, not the new file."""
    expected = COMPOSE.replace("image: postgres\n", "image: postgres:16\n")
    assert validate(COMPOSE, expected, DB_PART, "yaml") == ()
    written = 'db:\n    image: postgres:16\n    ports:\n      - "5432:5432"\n'  # the model's answer
    problems = validate(COMPOSE, written, DB_PART, "yaml")
    assert names(problems) == ["unrelated-deletion"] and "the update alone" in problems[0].message
    whole = "services:\n" + DB_PART  # a whole new file, as the update shows it: web: deleted
    assert validate(COMPOSE, whole, whole, "yaml") == ()


def test_an_output_that_is_a_section_alone_deletes_the_rest_of_the_file():
    """A README's section with no markers, written alone as the file: every line it deletes is near one
    the update repeats (its fences are the file's), and Markdown starts no block, so only the lines of
    the file it leaves out after its one line found once (``## Install``) say it is a part."""
    readme = "# demo\n## Install\n```bash\npip install demo\n```\n## Usage\n```bash\ndemo run\n```\nMIT\n"
    section = "## Install\n```bash\npip install 'demo[all]'\n```\n"
    problems = validate(readme, section, section, "markdown")
    assert names(problems) == ["unrelated-deletion"] and "the update alone" in problems[0].message
    assert validate(readme, readme.replace("pip install demo", "pip install 'demo[all]'"), section, "markdown") == ()


def test_an_instruction_alone_that_deletes_the_wrong_function_is_refused():
    """With no snippet, nothing anchors the deletion checks: the instruction's own words say what may go."""
    without_save = ORIGINAL.replace('def save(path, text):\n    with open(path, "w") as f:\n        f.write(text)\n\n\n',
                                    "")
    without_load = ORIGINAL.replace("def load(path):\n    with open(path) as f:\n        return f.read()\n\n\n", "")
    assert validate(ORIGINAL, without_save, "", "python", instruction="Delete the function `save`.") == ()
    assert validate(ORIGINAL, without_save, "", "python", instruction="save is not needed any more.") == ()
    problems = validate(ORIGINAL, without_load, "", "python", instruction="Delete the function `save`.")
    assert names(problems) == ["unrelated-deletion", "edit-not-applied"]
    assert "(lines 4-6)" in problems[0].message and "still defines it" in problems[1].message
    # The whole file gone: every line outside `save` is one the instruction does not ask to delete.
    assert names(validate(ORIGINAL, "", "", "python", instruction="Delete save from main.")) == ["unrelated-deletion"]
    # An instruction this check cannot read in full still keeps every definition it does not name.
    for instruction in ("Tidy this up.", "Delete save and the blank lines."):
        problems = validate(ORIGINAL, without_load, "", "python", instruction=instruction)
        assert names(problems) == ["unrelated-deletion"] and "`load`" in problems[0].message, instruction
    assert validate(ORIGINAL, without_load, "", "python", instruction="Tidy this up; load goes.") == ()


def test_a_rename_an_import_and_a_comment_an_instruction_asks_for_are_checked():
    renamed = CLEAN.replace("def load(", "def read(").replace("print(load(", "print(read(")
    assert validate(ORIGINAL, renamed, "", "python", instruction="rename load -> read") == ()
    half = CLEAN.replace("def load(", "def read(")
    assert names(validate(ORIGINAL, half, "", "python", instruction="Rename `load` to `read`.")) == ["edit-not-applied"]
    added = "import sys\n" + ORIGINAL
    assert validate(ORIGINAL, added, "", "python", instruction="add `import sys`") == ()
    assert names(validate(ORIGINAL, ORIGINAL.replace("import os", "import os, sys"), "", "python",
                          instruction="Add the import `import sys`.")) == ["edit-not-applied"]
    commented = ORIGINAL.replace("def main():\n", "def main():\n    # Print the file.\n")
    assert validate(commented, ORIGINAL, "", "python", instruction="Delete the comment beginning `# Print`.") == ()
    kept = commented.replace("print(load", "print( load")
    problem = validate(commented, kept, "", "python", instruction="Remove the comment that starts `# Print`.")
    assert names(problem) == ["edit-not-applied"] and "keeps it" in problem[0].message
    # The comment removed, and code with it: the code is not asked for.
    too_much = ORIGINAL.replace('    with open(path) as f:\n        return f.read()\n', "    pass\n")
    assert names(validate(commented, too_much, "", "python", instruction="Remove the comment that starts `# Print`.")) \
        == ["unrelated-deletion"]
    block = "/* Print the file,\n   then stop. */\nfunction main() {\n  print(load());\n}\n"
    assert validate(block, block.split("*/\n")[1], "", "javascript",
                    instruction="Delete the comment beginning `/* Print the file`.") == ()


def test_wordings_that_name_no_deletion_ask_for_none():
    """"Remove `save` from `__all__`" and "Remove the print from main" delete no definition; only a
    definition the file has, or one named with its class, is asked to go."""
    for instruction in ("Remove `save` from `__all__`.", "Remove the print from main.", "Remove the save button.",
                        "Delete `os` from the imports."):
        assert validate(ORIGINAL, CLEAN, "", "python", instruction=instruction) == (), instruction
    in_class = "class Store:\n    def save(self):\n        pass\n\n    def load(self):\n        pass\n"
    output = "class Store:\n    def load(self):\n        pass\n"
    for instruction in ("drop Store.save", "Delete save from Store.", "Store no longer needs save.",
                        "Remove the save method from Store."):
        assert validate(in_class, output, "", "python", instruction=instruction) == (), instruction
        assert names(validate(in_class, in_class + "\n", "", "python", instruction=instruction)) == ["edit-not-applied"]
    # The class named is the one whose method goes; a function renamed is not deleted.
    two = in_class + "\n\nclass Cache:\n    def save(self):\n        return 1\n"
    wrong = two.replace("class Cache:\n    def save(self):\n        return 1\n", "class Cache:\n    pass\n")
    problems = validate(two, wrong, "", "python", instruction="Delete save from Store.")
    assert "edit-not-applied" in names(problems) and "`Store.save`" in problems[-1].message
    renamed = CLEAN.replace("def save(", "def store(")
    problems = validate(ORIGINAL, renamed, "", "python", instruction="Remove save.")
    assert names(problems) == ["edit-not-applied"] and "keeps its code" in problems[0].message


def test_every_committed_training_answer_does_what_its_instruction_asks():
    """The committed held-out training edits, with their instruction as templated and as worded alone
    (``data.instructions.alone``): the known answer leaves no ask undone and deletes nothing unnamed."""
    import random

    from data.instructions import alone

    records = [task for task in load_tasks("data/train/valid.jsonl.gz") if task.instruction]
    assert len(records) > 100
    rng = random.Random(0)
    for task in records:
        assert validate(task.original, task.expected, task.update, task.language, instruction=task.instruction) == (), \
            task.id
        if worded := alone(task.instruction, rng):
            assert validate(task.original, task.expected, "", task.language, instruction=worded) == (), (task.id, worded)
            assert "edit-not-applied" in names(validate(task.original, task.original, "", task.language,
                                                        instruction=worded)), (task.id, worded)
