"""A diff turned around (``fastapply.reverse``): known answers, line by line."""

import pytest

from fastapply.errors import UsageError
from fastapply.reverse import reversed_diff


def test_a_git_part_turned_around_line_by_line():
    """Paths, ids, modes, renames and a created file swap sides; a hunk's ranges and its - and + lines
    swap, its counts kept to (a deleted `-- x` and an added `++ y` are its lines, not a file's header);
    the `\\ No newline` line stays with its line; CRLF line ends stay."""
    diff = ("diff --git a/old.py b/new.py\nold mode 100644\nnew mode 100755\nsimilarity index 90%\n"
            "rename from old.py\nrename to new.py\nindex 1234567..89abcde\n--- a/old.py\n+++ b/new.py\n"
            "@@ -1,3 +1,3 @@ def f():\n a\n--- x\n+++ y\n b\n\\ No newline at end of file\n"
            "diff --git a/made.txt b/made.txt\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n"
            "+++ b/made.txt\n@@ -0,0 +1 @@\n+hi\r\n")
    assert reversed_diff(diff) == (
        "diff --git a/new.py b/old.py\nnew mode 100644\nold mode 100755\nsimilarity index 90%\n"
        "rename to old.py\nrename from new.py\nindex 89abcde..1234567\n--- a/new.py\n+++ b/old.py\n"
        "@@ -1,3 +1,3 @@ def f():\n a\n-++ y\n+-- x\n b\n\\ No newline at end of file\n"
        "diff --git a/made.txt b/made.txt\ndeleted file mode 100644\nindex e69de29..0000000\n--- a/made.txt\n"
        "+++ /dev/null\n@@ -1 +0,0 @@\n-hi\r\n")


def test_a_binary_patch_a_copy_and_a_series():
    """A binary patch's two hunks swap; a copy is undone by deleting the copy git's index line names (a
    usage error with no index line); the mails of a series come last first, each with its signature."""
    binary = ("diff --git a/x.bin b/x.bin\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 3\nFORWARD\n\n"
              "literal 2\nBACKWARD\n\n")
    assert reversed_diff(binary) == ("diff --git a/x.bin b/x.bin\nindex 2222222..1111111 100644\nGIT binary patch\n"
                                     "literal 2\nBACKWARD\n\nliteral 3\nFORWARD\n\n")
    copy = ("diff --git a/a.py b/b.py\nsimilarity index 95%\ncopy from a.py\ncopy to b.py\nindex 1234567..89abcde\n"
            "--- a/a.py\n+++ b/b.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert reversed_diff(copy) == "diff --git a/b.py b/b.py\ndeleted file mode 100644\nindex 89abcde..0000000\n"
    with pytest.raises(UsageError, match="cannot undo the copy to b.py"):
        reversed_diff(copy.replace("index 1234567..89abcde\n", ""))
    mail = ("From {sha} Mon Sep 17 00:00:00 2001\nSubject: [PATCH] {n}\n\n---\ndiff --git a/f b/f\n--- a/f\n"
            "+++ b/f\n@@ -1 +1 @@\n-{old}\n+{new}\n-- \n2.39.5\n\n")
    series = (mail.format(sha="1" * 40, n=1, old="a", new="b") + mail.format(sha="2" * 40, n=2, old="b", new="c"))
    assert reversed_diff(series) == (mail.format(sha="2" * 40, n=2, old="b", new="c").replace("-b\n+c", "-c\n+b")
                                     + mail.format(sha="1" * 40, n=1, old="a", new="b").replace("-a\n+b", "-b\n+a"))


def test_what_cannot_be_turned_around():
    with pytest.raises(UsageError, match="not a chat model's answer"):
        reversed_diff("Here is the change:\n\n```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n")
    with pytest.raises(UsageError, match="cannot make x.py again"):
        reversed_diff("*** Begin Patch\n*** Delete File: x.py\n*** End Patch\n")
    assert reversed_diff("*** Begin Patch\n*** Add File: n.txt\n+one\n*** End Patch\n") == (
        "*** Begin Patch\n--- a/n.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-one\n*** End Patch\n")


def test_a_last_line_with_no_newline_on_either_side_stays_so():
    """A change of a last line that ends with no newline before and after: turned around, its `-` line
    comes first, each with its own mark, so the undone file ends as it did (before, the old file's mark
    came last and the file was written with a newline)."""
    from fastapply.diffs import read_patch
    from fastapply.patch import apply_patch

    diff = ("--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-y = 2\n\\ No newline at end of file\n+y = 3\n"
            "\\ No newline at end of file\n")
    turned = reversed_diff(diff)
    assert turned.endswith(" a\n-y = 3\n\\ No newline at end of file\n+y = 2\n\\ No newline at end of file\n")
    assert apply_patch("a\ny = 3", read_patch(turned), None).text == "a\ny = 2"
