"""A snippet's indentation in the file's own kind: a file indented with tabs gets tabs where the snippet
indents with spaces (a chat model's answer, a snippet typed at a terminal), and a file indented with
spaces gets spaces where the snippet indents with tabs.

Merged as written, such a snippet anchors only where whitespace is ignored, and its new lines go in with
the other kind: in the known answers' files indented with tabs, their snippets' tabs turned to four
spaces each made 13 merges certain and wrong. How many spaces one tab stands for is read from the lines
the snippet shares with the file (alike once stripped); where it shares none, from the snippet's own
steps (into a file of tabs only). Only where every indented line of the file is of one kind and every
indented line of the snippet of the other (nine in ten), not where the file holds more of the
snippet's indented lines as they are than turned (a part of the file indented the other way), and only in
a snippet with lazy markers: one without is often the whole new file, which may change the file's
indentation (minimist's `test/default_bool.js` in the suite, spaces to tabs).
"""

from __future__ import annotations

from collections import Counter

from fastapply.markers import marker_lines

TAB, SPACE = "\t", " "


def in_file_indentation(snippet: str, original: str, language: str | None) -> str:
    """``snippet`` with its leading whitespace of the other kind turned into the file's (``original``); a
    snippet with no lazy marker is left as it is: it may be the whole new file, indented anew.

    >>> in_file_indentation("func f() {\\n    return 1\\n// ...\\n", "func f() {\\n\\treturn 0\\n}\\n", "go")
    'func f() {\\n\\treturn 1\\n// ...\\n'
    >>> in_file_indentation("def f():\\n\\treturn 1\\n# ...\\n", "def f():\\n  return 0\\n", "python")
    'def f():\\n  return 1\\n# ...\\n'
    """
    file_kind, snippet_kind = _kind(original), _kind(snippet)
    if file_kind is None or snippet_kind is None or file_kind == snippet_kind or not any(
            marker_lines(snippet.split("\n"), language)):
        return snippet
    width = _width(snippet, original, snippet_kind)
    if width is None:
        return snippet
    lines = snippet.split("\n")
    for i, line in enumerate(lines):
        n = _lead(line, snippet_kind)
        lines[i] = (TAB * (n // width) + SPACE * (n % width) if file_kind == TAB else SPACE * (n * width)) + line[n:]
    held, turned = set(original.split("\n")), [(old, new) for old, new in zip(snippet.split("\n"), lines) if old != new]
    as_they_are, as_turned = sum(old in held for old, _ in turned), sum(new in held for _, new in turned)
    return snippet if as_they_are > as_turned else "\n".join(lines)  # a part of the file kept the snippet's kind


def _lead(line: str, kind: str) -> int:
    """How many of ``kind`` (a tab, a space) ``line`` starts with."""
    return len(line) - len(line.lstrip(kind))


def _kind(text: str) -> str | None:
    """``TAB`` where lines start with a tab and at most one in ten as many with two spaces or more (a block
    comment's text), ``SPACE`` the other way round, else None (both kinds, or flat). A line starting with
    one space is not counted: a block comment's ` *` lines under a `/**` at column 0."""
    lines = [line for line in text.split("\n") if line.strip()]
    tabs, spaces = sum(line.startswith(TAB) for line in lines), sum(line.startswith(SPACE * 2) for line in lines)
    return TAB if tabs and spaces * 10 <= tabs else SPACE if spaces and tabs * 10 <= spaces else None


def _width(snippet: str, original: str, snippet_kind: str) -> int | None:
    """How many spaces one tab stands for: of the widths (4, 2, 8, 3, in that order of preference) that
    divide the indentation of eight in ten of the lines indented with spaces (the snippet's; the file's
    where the snippet has tabs; a comment's ` *` line one past it; the others align with spaces after their
    tabs), the one that most of the lines the snippet shares with the file (alike once stripped, more than
    one character, indented in both) allow: their spaces over their tabs in some pair of their copies."""
    def leads(text: str, kind: str) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for line in text.split("\n"):
            if len(line.strip()) > 1 and (n := _lead(line, kind)):
                out.setdefault(line.strip(), set()).add(n)
        return out

    spaced = snippet if snippet_kind == SPACE else original
    steps = [(n, line.lstrip().startswith("*")) for line in spaced.split("\n") if (n := _lead(line, SPACE))]
    widths = [w for w in (4, 2, 8, 3) if 10 * sum(n % w == 0 or star and n % w == 1 for n, star in steps)
              >= 8 * len(steps)]
    mine, theirs = leads(snippet, snippet_kind), leads(original, TAB if snippet_kind == SPACE else SPACE)
    spaces, tabs = (mine, theirs) if snippet_kind == SPACE else (theirs, mine)
    allowed = Counter(w for text in spaces.keys() & tabs.keys()
                      for w in {s // t for s in spaces[text] for t in tabs[text] if s % t == 0})
    return max(widths, key=lambda w: allowed[w], default=None)
