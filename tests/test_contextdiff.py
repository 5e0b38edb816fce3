"""Context diffs (``diff -c``) read as the unified diffs they amount to, line for line."""

import pytest

from fastapply.contextdiff import as_unified
from fastapply.diffs import read_patch
from fastapply.errors import UsageError
from fastapply.fileparts import split_files
from fastapply.patch import apply_patch

# GNU diff -C1 of "a b c d e f g" -> "a B c e f X g", then a file's last line changed with no newline at its
# end, and a file created (the old side of a created file is "*** 0 ****" and shows no lines).
CONTEXT = """\
*** old.txt\t2026-11-29 11:00:33.140956460 +0000
--- new.txt\t2026-11-29 11:00:33.140956460 +0000
***************
*** 1,5 ****
  a
! b
  c
- d
  e
--- 1,4 ----
  a
! B
  c
  e
***************
*** 6,7 ****
--- 5,7 ----
  f
+ X
  g
"""


def test_hunks_become_unified_hunks_keeping_every_line_number():
    """A group of changed lines is its old lines deleted and new ones added; a side left out (only kept
    lines) is the other side's kept lines; the file's header becomes ``---`` / ``+++``; the lines saved
    are blank at each hunk's end, so the text has as many lines as before."""
    unified = as_unified(CONTEXT)
    assert len(unified.split("\n")) == len(CONTEXT.split("\n"))
    lines = [line for line in unified.split("\n") if line]
    assert lines == ["--- old.txt\t2026-11-29 11:00:33.140956460 +0000", "+++ new.txt\t2026-11-29 11:00:33.140956460 +0000",
                     "@@ -1,5 +1,4 @@", " a", "-b", "+B", " c", "-d", " e",
                     "@@ -6,2 +5,3 @@", " f", "+X", " g"]
    assert unified.split("\n").index("@@ -6,2 +5,3 @@") == CONTEXT.split("\n").index("*** 6,7 ****") - 1  # the stars' line
    original = "a\nb\nc\nd\ne\nf\ng\n"
    assert apply_patch(original, read_patch(CONTEXT), None).text == "a\nB\nc\ne\nf\nX\ng\n"


def test_no_newline_marks_created_files_and_stripped_blank_lines():
    unended = ("*** r1\n--- r2\n***************\n*** 1,2 ****\n  a\n! b\n\\ No newline at end of file\n"
               "--- 1,2 ----\n  a\n! c\n\\ No newline at end of file\n")
    patch = read_patch(unended)
    assert patch.final_newline is False and apply_patch("a\nb", patch, None).text == "a\nc"
    assert as_unified(unended).split("\n")[2] == "@@ -1,2 +1,2 @@"  # the marks are no lines of the file
    one = "*** a\r\n--- a\r\n***************\r\n*** 1 ****\r\n! y\r\n\\ No newline at end of file\r\n--- 1 ----\r\n! z\r\n"
    assert as_unified(one).split("\n")[2:6] == ["@@ -1,1 +1,1 @@\r", "-y\r", "\\ No newline at end of file\r", "+z\r"]
    ended = "*** s1\n--- s2\n***************\n*** 1,2 ****\n  a\n! b\n\\ No newline at end of file\n--- 1,2 ----\n  a\n! b\n"
    assert read_patch(ended).final_newline is True
    created = "*** /dev/null\n--- new.py\n***************\n*** 0 ****\n--- 1,2 ----\n+ x = 1\n+ y = 2\n"
    assert read_patch(created).creates and as_unified(created).split("\n")[2] == "@@ -0,0 +1,2 @@"
    stripped = "*** a\n--- a\n***************\n*** 1,3 ****\n  p\n\n! q\n--- 1,3 ----\n  p\n\n! r\n"  # "  " made ""
    assert apply_patch("p\n\nq\n", read_patch(stripped), None).text == "p\n\nr\n"


def test_a_diff_of_several_files_is_split_and_crlf_kept():
    diff = ("diff -rc old/a.py new/a.py\r\n*** old/a.py\r\n--- new/a.py\r\n***************\r\n*** 1 ****\r\n! x\r\n"
            "--- 1 ----\r\n! y\r\ndiff -rcN old/b.py new/b.py\r\n*** old/b.py\t1970-01-01 00:00:00.000000000 +0000\r\n"
            "--- new/b.py\r\n***************\r\n*** 0 ****\r\n--- 1 ----\r\n+ z\r\n")
    parts = split_files(diff)
    assert [(p.line, p.path, p.action) for p in parts] == [(1, "a.py", "edit"), (9, "b.py", "create")]
    assert parts[1].ends is not None and parts[1].ends.newline == "\r\n"  # the created file's lines end in CRLF
    assert parts[1].ends.original_lines is None and "+z\r\n" in as_unified(diff)  # one CR each, not two


def test_text_without_a_context_hunk_is_left_as_it_is_and_a_broken_hunk_is_named():
    for text in ("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch\n", "***************\nstars\n", "x\n"):
        assert as_unified(text) == text
    broken = "*** a\n--- a\n***************\n*** 1,2 ****\n  p\n! q\n--- 1,2 ----\n  other\n! r\n"
    with pytest.raises(UsageError, match="hunk at line 3 does not pair its old and new lines"):
        as_unified(broken)
    with pytest.raises(UsageError, match="no --- line"):
        as_unified("*** a\n--- a\n***************\n*** 1 ****\n! q\n")


def test_a_file_that_holds_a_context_diff_is_edited_by_snippets():
    """A patch file of context hunks, given a snippet of its own text, reads it as a snippet (not as a diff
    to apply to it), as a file holding unified hunks does."""
    original = CONTEXT + "notes\n"
    assert read_patch(CONTEXT, original) is None
    assert read_patch("*** a\n--- a\n***************\n*** 1,2 ****\n  p\n! q\n--- 1,2 ----\n  zz\n! r\n", original) is None
