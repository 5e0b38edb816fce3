"""A snippet's indentation in the file's own: a file indented with tabs gets tabs where the snippet indents
with spaces (a chat model's answer, a snippet typed at a terminal), a file indented with spaces gets
spaces where the snippet indents with tabs, and a file of two spaces a level gets two where the snippet
writes four (or the other way round).

Merged as written, such a snippet anchors only where whitespace is ignored, and its new lines go in
indented unlike the file (`benchmarks/merge_bench.py --known ... --spaced`: the known answers' files of
tabs, their snippets' tabs made four spaces each, 13 merges certain and wrong; `--doubled`, 23). How wide
a level of the snippet is in the file's is read from the lines the snippet shares with the file (alike
once stripped, indented in both), among the widths that fit the snippet's own steps. Only where nine in
ten of the file's indented lines are of one kind and nine in ten of the snippet's of the other (or of
the other step), not where the file holds more of the snippet's indented lines as they are than turned
(a part of the file indented the snippet's way), and only in a snippet with lazy markers: one without is
often the whole new file, which may change the file's indentation (minimist's `test/default_bool.js` in
the suite, spaces to tabs). A snippet that, merged as written, would re-indent the whole file is a doubt
(``indented_as``, asked by ``engine.merge_reading``).
"""

from __future__ import annotations

from collections import Counter

from fastapply.markers import marker_lines

TAB, SPACE = "\t", " "


def in_file_indentation(snippet: str, original: str, language: str | None) -> str:
    """``snippet`` with its leading whitespace of the other kind turned into the file's (``original``), or
    its levels of four spaces made the file's two (or the other way round); a snippet with no lazy marker
    is left as it is: it may be the whole new file, indented anew.

    >>> in_file_indentation("func f() {\\n    return 1\\n// ...\\n", "func f() {\\n\\treturn 0\\n}\\n", "go")
    'func f() {\\n\\treturn 1\\n// ...\\n'
    >>> in_file_indentation("def f():\\n\\treturn 1\\n# ...\\n", "def f():\\n  return 0\\n", "python")
    'def f():\\n  return 1\\n# ...\\n'
    """
    file_kind, snippet_kind = _kind(original), _kind(snippet)
    if file_kind is None or snippet_kind is None or not any(marker_lines(snippet.split("\n"), language)):
        return snippet
    if file_kind != snippet_kind:
        width = _width(snippet, original, snippet_kind)
        if width is None:
            return snippet
        turn = (lambda n: TAB * (n // width) + SPACE * (n % width)) if file_kind == TAB else (
            lambda n: SPACE * (n * width))
    elif file_kind == SPACE and (steps := _steps(snippet, original)) is not None:
        mine, theirs = steps
        turn = lambda n: SPACE * (n // mine * theirs + n % mine)  # noqa: E731
    else:
        return snippet
    lines = [turn(n) + line[n:] for line in snippet.split("\n") for n in [_lead(line, snippet_kind)]]
    held, turned = set(original.split("\n")), [(old, new) for old, new in zip(snippet.split("\n"), lines) if old != new]
    as_they_are, as_turned = sum(old in held for old, _ in turned), sum(new in held for _, new in turned)
    return snippet if as_they_are > as_turned else "\n".join(lines)  # a part of the file kept the snippet's kind


def _steps(snippet: str, original: str) -> tuple[int, int] | None:
    """The snippet's step and the file's (``_step``), (4, 2) or (2, 4), where nine in ten of the lines the
    snippet shares with the file (alike once stripped, more than one character, indented in both) have
    their indentation scaled so and at most one in ten as it is. A snippet that moved lines into a new
    block has their opening line one step of the file's deeper than the lines around it: its own step is
    the file's."""
    mine, theirs = _step(snippet), _step(original)
    if {mine, theirs} != {2, 4}:
        return None
    snippet_leads, file_leads = _leads(snippet, SPACE), _leads(original, SPACE)
    shared = snippet_leads.keys() & file_leads.keys()
    scaled, kept = (sum(any(s * a == f * b for s in snippet_leads[text] for f in file_leads[text]) for text in shared)
                    for a, b in ((theirs, mine), (1, 1)))
    return (mine, theirs) if shared and 10 * scaled >= 9 * len(shared) >= 90 * kept else None


def _step(text: str) -> int | None:
    """4 where it divides nine in ten of ``text``'s space indentations, else 2 where it does, else None: a
    file of two spaces a level has more than one in ten at an odd level."""
    return next(iter(_dividing(text, (4, 2), 9)), None)


def _dividing(text: str, widths: tuple[int, ...], tenths: int) -> list[int]:
    """Those of ``widths`` that divide ``tenths`` in ten of ``text``'s space indentations (a comment's ` *`
    line, one past a multiple, counted as the multiple); none where it has no line indented with spaces."""
    steps = [(n, line.lstrip().startswith("*")) for line in text.split("\n") if (n := _lead(line, SPACE))]
    return [w for w in widths if steps and 10 * sum(n % w == 0 or star and n % w == 1 for n, star in steps)
            >= tenths * len(steps)]


def _leads(text: str, kind: str) -> dict[str, set[int]]:
    """Each line's text (stripped, more than one character) and how many of ``kind`` its copies start with
    (indented ones only)."""
    out: dict[str, set[int]] = {}
    for line in text.split("\n"):
        if len(line.strip()) > 1 and (n := _lead(line, kind)):
            out.setdefault(line.strip(), set()).add(n)
    return out


def indented_as(text: str, snippet: str) -> bool:
    """Whether every indented line of ``text`` (the file with ``snippet`` merged as written) is a line of the
    snippet: its markers kept no line of the file at the file's own indentation, so the file is indented
    throughout as the snippet is.

    >>> indented_as("a:\\n  b\\nc\\n", "a:\\n  b\\n# ...\\n"), indented_as("a:\\n  b\\n    c\\n", "a:\\n  b\\n# ...\\n")
    (True, False)
    """
    shown = set(snippet.split("\n"))
    return all(line in shown for line in text.split("\n") if line[:1] in (TAB, SPACE) and line.strip())


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
    widths = _dividing(snippet if snippet_kind == SPACE else original, (4, 2, 8, 3), 8)
    mine, theirs = _leads(snippet, snippet_kind), _leads(original, TAB if snippet_kind == SPACE else SPACE)
    spaces, tabs = (mine, theirs) if snippet_kind == SPACE else (theirs, mine)
    allowed = Counter(w for text in spaces.keys() & tabs.keys()
                      for w in {s // t for s in spaces[text] for t in tabs[text] if s % t == 0})
    return max(widths, key=lambda w: allowed[w], default=None)
