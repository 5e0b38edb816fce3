"""What counts as a lazy marker, and what does not."""

import pytest

from fastapply.markers import count_markers, has_inline_marker, is_marker_text, marker_lines

MARKERS = [
    "# ... existing code ...",
    "// ... existing code ...",
    "/* ... existing code ... */",
    "{/* ... existing code ... */}",
    "<!-- ... existing code ... -->",
    "# ...existing code...",
    "// ... rest of code ...",
    "// ... rest of the file ...",
    "# ... keep existing code",
    "# keep existing code",
    "// existing code ...",
    "// (existing code unchanged)",
    "# ...",
    "// ...",
    "/* ... */",
    "...",
    "…",
    "// … other methods …",
    "# rest of the function unchanged",
]
NOT_MARKERS = [
    "# retry later...",
    "// TODO: handle errors",
    "x = ...",
    "print('...')",
    "# existing users are migrated below",
    "#include <stdio.h>",
    "...args",
    "// " + "... " + "x" * 200,
    "",
]


@pytest.mark.parametrize("line", MARKERS)
def test_markers(line):
    assert is_marker_text(line)


@pytest.mark.parametrize("line", NOT_MARKERS)
def test_not_markers(line):
    assert not is_marker_text(line)


def test_python_ellipsis_body_is_code_but_ellipsis_between_code_is_a_marker():
    lines = ["class P(Protocol):", "    def f(self):", "        ...", "    def g(self):", "        ..."]
    assert marker_lines(lines, "python") == [False] * 5
    lines = ["class A:", "    ...", "    def g(self):", "        return 1"]
    assert marker_lines(lines, "python") == [False, True, False, False]
    assert marker_lines(["def f():", "    ..."], "javascript") == [False, True]


def test_inline_markers():
    assert has_inline_marker("foo(a, /* ... */)")
    assert has_inline_marker("x = {  // ... existing code ...")
    assert not has_inline_marker("x = y  # compute the value")
    assert not has_inline_marker("url = 'http://example.com'")


def test_count_markers_counts_whole_lines_and_inline_ones():
    text = "a = 1\n# ... existing code ...\nf(1, /* ... */)\n    // ... rest of code ...\n"
    assert count_markers(text, "python") == 3
