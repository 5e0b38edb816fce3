"""Known answers for the eval metrics: each match level and each error category."""

from __future__ import annotations

import pytest

from fastapply.metrics import (
    MARKERS_LEFT, NO_OUTPUT, NOT_APPLIED, OUTSIDE_EDIT, SYNTAX_ERROR, TRUNCATED, WRONG_EDIT, changed_ranges,
    changes_outside_edit, geomean, median, same_tree, score, speedups,
)

ORIGINAL = '''\
import os


def load(path):
    with open(path) as handle:
        return handle.read()


def save(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def remove(path):
    os.remove(path)
'''
# the edit: save() gains an encoding
EXPECTED = ORIGINAL.replace('open(path, "w")', 'open(path, "w", encoding="utf-8")')


def test_exact_match():
    acc = score(EXPECTED, EXPECTED, ORIGINAL, "python")
    assert (acc.exact, acc.exact_ws, acc.tree_equal, acc.errors) == (True, True, True, ())


def test_trailing_whitespace_only():
    output = EXPECTED.replace("handle.read()\n", "handle.read()   \n") + "\n\n"
    acc = score(output, EXPECTED, ORIGINAL, "python")
    assert (acc.exact, acc.exact_ws, acc.tree_equal, acc.errors) == (False, True, True, ())


def test_same_tree_but_reformatted():
    output = EXPECTED.replace('open(path, "w", encoding="utf-8")', 'open( path,"w",  encoding = "utf-8" )')
    acc = score(output, EXPECTED, ORIGINAL, "python")
    assert (acc.exact, acc.exact_ws, acc.tree_equal, acc.errors) == (False, False, True, ())


def test_tree_keeps_comments_and_literals():
    assert not same_tree("x = 1  # one\n", "x = 1  # uno\n", "python")
    assert not same_tree('x = "a b"\n', 'x = "a  b"\n', "python")
    assert same_tree("f(a,b)\n", "f(a, b)\n", "python")
    assert not same_tree("f(a, b)\n", "f(b, a)\n", "python")
    assert same_tree("let x = {a: 1};", "let x = { a: 1 };", "javascript")


@pytest.mark.parametrize("output", [None, ""])
def test_no_output(output):
    acc = score(output, EXPECTED, ORIGINAL, "python")
    assert (acc.exact, acc.errors) == (False, (NO_OUTPUT,))


def test_truncated():
    output = EXPECTED[: EXPECTED.index("def remove")]
    acc = score(output, EXPECTED, ORIGINAL, "python", closed=False)
    assert TRUNCATED in acc.errors
    assert score(output, EXPECTED, ORIGINAL, "python", closed=True).errors == (OUTSIDE_EDIT,)


def test_markers_left():
    output = EXPECTED.replace('def load(path):\n    with open(path) as handle:\n        return handle.read()\n',
                              "# ... existing code ...\n")
    acc = score(output, EXPECTED, ORIGINAL, "python")
    assert MARKERS_LEFT in acc.errors and OUTSIDE_EDIT in acc.errors and SYNTAX_ERROR not in acc.errors


def test_marker_that_the_reference_has_is_not_left_over():
    original = "x = 1\n# ... existing code ...\ny = 2\n"
    expected = "x = 1\n# ... existing code ...\ny = 3\n"
    output = "x = 1\n# ... existing code ...\ny = 4\n"
    assert score(output, expected, original, "python").errors == (WRONG_EDIT,)


def test_syntax_error_inside_the_edit():
    output = EXPECTED.replace('encoding="utf-8")', 'encoding="utf-8"')
    acc = score(output, EXPECTED, ORIGINAL, "python")
    assert acc.errors == (SYNTAX_ERROR,)


def test_change_outside_the_edit():
    output = EXPECTED.replace("os.remove(path)", "os.unlink(path)")
    assert score(output, EXPECTED, ORIGINAL, "python").errors == (OUTSIDE_EDIT,)


def test_wrong_edit_in_the_right_place():
    output = ORIGINAL.replace('open(path, "w")', 'open(path, "a", encoding="utf-8")')
    assert score(output, EXPECTED, ORIGINAL, "python").errors == (WRONG_EDIT,)


def test_edit_not_applied_is_its_own_category():
    assert score(ORIGINAL, EXPECTED, ORIGINAL, "python").errors == (NOT_APPLIED,)  # the original copied back
    elsewhere = ORIGINAL.replace("import os", "import os  # files")  # a change, but not the edit's
    assert NOT_APPLIED in score(elsewhere, EXPECTED, ORIGINAL, "python").errors


def test_unknown_language_has_no_tree_verdict():
    acc = score("a\nb\n", "a\nc\n", "a\nd\n", "cobol")
    assert acc.tree_equal is None and acc.errors == (WRONG_EDIT,)
    assert score("a\n", "a\n", "b\n", "cobol").tree_equal is None


def test_changed_ranges_and_outside():
    assert changed_ranges("a\nb\nc\n", "a\nB\nc\nd\n") == [(1, 2), (3, 3)]
    assert changed_ranges("a\nb\nc\n", "b\nc\n") == [(0, 1)]
    original = "a\nb\nc\nd\ne\n"
    expected = "a\nb\nC\nd\ne\n"
    assert not changes_outside_edit(original, "a\nb\nX\nd\ne\n", expected)  # same line, other text
    assert not changes_outside_edit(original, "a\nb\nC\nnew\nd\ne\n", expected)  # touching the edit
    assert changes_outside_edit(original, "A\nb\nC\nd\ne\n", expected)
    assert changes_outside_edit(original, "a\nb\nC\nd\ne\nf\n", expected)  # an insertion far away


def test_speedups():
    speed = {"none": {"passes": 100, "seconds": 10.0}, "pld": {"passes": 50, "seconds": 4.0},
             "fastapply": {"passes": 10, "seconds": 2.0}}
    assert speedups(speed, "passes")["fastapply"] == {"plain": 10.0, "prompt_lookup": 5.0}
    assert speedups(speed, "seconds")["fastapply"] == {"plain": 5.0, "prompt_lookup": 2.0}
    # the generate() baselines win over the loop's none/pld when both ran
    speed["plain"] = {"seconds": 20.0}
    assert speedups(speed, "seconds")["fastapply"]["plain"] == 10.0
    assert speedups({"fastapply": {"seconds": 1.0}}, "seconds")["fastapply"] == {"plain": None,
                                                                                 "prompt_lookup": None}


def test_means():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([]) is None
    assert median([3, 1, 2]) == 2 and median([1, 2, 3, 4]) == 2.5 and median([]) is None
