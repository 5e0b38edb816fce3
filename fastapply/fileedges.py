"""Where a snippet meets the file's first or last line, or may be the whole file.

A segment with no marker before (after) it reaches the file's first (last) line, deleting the original
lines before (after) its anchors (``edge_doubt`` says when that is doubtful); a snippet with no marker at
all may be a part of the file or the whole new file (``inside_file``, by the lines each holds once,
``held_once``); lines deleted at the file's end may still be used (``lost_at_end``, ``still_wired``).
"""

from __future__ import annotations

import re
from collections import Counter

from fastapply.asks import identifiers
from fastapply.defs import definitions
from fastapply.edges import STRING_START
from fastapply.segments import is_trivial, keeps_text

EDGE_DELETION = 3  # non-blank lines a segment with no marker before (after) it may delete at the file's edge


def held_once(original: list[str], shown: list[str]) -> list[tuple[int, int]]:
    """(index in ``shown``, index in ``original``) of each line, not a trivial one, that the original and
    the snippet each have once, in the snippet's order: the lines that place a snippet with no marker.

    >>> held_once(["a = 1", "}", "b = 2", "}"], ["}", "b = 2", "c = 3"])
    [(1, 2)]
    """
    in_original, in_snippet = Counter(original), Counter(shown)
    where = {line: i for i, line in enumerate(original)}  # a line held once: its one place
    return [(i, where[line]) for i, line in enumerate(shown)
            if in_original[line] == in_snippet[line] == 1 and not is_trivial(line)]


def inside_file(original: list[str], snippet: list[str], allowance: int = EDGE_DELETION) -> bool:
    """Whether ``snippet``, a snippet with no marker, is a part of the file and not the whole new file:
    its lines that the original and it each have once (not trivial ones) lie after lines of the original
    that it holds fewer times than the original does (a front matter's ``---`` shown only at its end),
    more than it writes above the first of them and more than ``allowance`` (a
    README's section without the title and the sections above it), or before such lines, more than it
    writes below the last (without the sections after it). Lines either has twice say nothing: ``- TBD``
    ending the section shown ends the last one too. The allowance is ``edge_doubt``'s: a whole file may
    delete a few lines at its edges (an import, a header comment) or rewrite them; a part leaves out
    more, which the whole file would delete. With none, any line left out at an edge makes the whole
    file a doubt.

    >>> original = ["import os\\n", "import re\\n", "import sys\\n", "\\n", "class A:\\n", "    x = 1\\n"]
    >>> inside_file(original, original[4:]), inside_file(original, original[1:])  # three imports lost, one
    (False, False)
    >>> inside_file(["# notes\\n", *original], original[4:])  # four lines left out above it: a part
    True
    >>> inside_file(original, original[4:], allowance=0)  # any line left out
    True
    >>> inside_file(original, ["import json\\n", *original[1:5], "    x = 2\\n"], 0)  # its first line rewritten
    False
    """
    stripped, shown = [line.strip() for line in original], [line.strip() for line in snippet]
    pairs = held_once(stripped, shown)
    if not pairs:
        return False
    anchors, found = [i for i, _ in pairs], [place for _, place in pairs]
    start, end = min(found), max(found)
    in_original, in_snippet = Counter(stripped), Counter(shown)

    def left_out(lines: list[str], written: list[str]) -> bool:
        missing = sum(1 for line in lines if not is_trivial(line)
                      and in_original[line.strip()] > in_snippet[line.strip()])
        return missing > max(allowance, sum(1 for line in written if line.strip()))

    return left_out(original[:start], snippet[:anchors[0]]) or left_out(original[end + 1:], snippet[anchors[-1] + 1:])


def lost_at_end(removed: list[str], added: list[str]) -> list[str]:
    r"""The original lines a snippet deletes at the file's end (``removed``) that the merged file lost: not a
    lone bracket (a lost `)` or `}` is a syntax error), nor edited into a line the snippet puts in their
    place (``added``).

    >>> lost_at_end(["}\n", "\n", "__all__ = ['Reader']\n"], [])
    ["__all__ = ['Reader']\n"]
    >>> lost_at_end(["module.exports = load;\n"], ["module.exports = load; // the API\n"])
    []
    """
    return [line for line in removed if not is_trivial(line) and not any(
        not is_trivial(new) and keeps_text(line, new) for new in added)]


def still_wired(removed: list[str], added: list[str], kept: str, language: str | None) -> str | None:
    r"""The first of the original lines a snippet deletes at the file's end (``removed``) that the merged
    file (``kept``) lost (``lost_at_end``: ``added`` are the lines it puts in their place), where the
    snippet puts a new definition in their place, or they use a definition the merged file keeps (not in
    ``added``, nor exported another way): ``module.exports = load;`` deleted by a snippet that ends with a
    new function and no marker after it. A snippet that ends by adding a definition means to add it, not to
    delete the lines after. Else None.

    >>> still_wired(["\n", "module.exports = load;\n"], [], "function load() {}\n", "javascript")
    'module.exports = load;'
    >>> still_wired(["export {};\n"], ["function added() {}\n"], "function added() {}\n", "typescript")
    'export {};'
    >>> still_wired(["module.exports = load;\n"], ["module.exports = load; // the API\n"], "", "javascript")
    """
    lost = lost_at_end(removed, added)
    if language is None or not lost:
        return None
    if definitions("".join(added), language):
        return lost[0].strip()
    defined = {d.name for d in definitions(kept, language)} - set(identifiers("".join(added), language))
    for line in lost:
        if any(name in defined and not re.search(rf"^\s*export\b.*\b{re.escape(name)}\b", kept, re.M)
               for name in identifiers(line, language)):
            return line.strip()
    return None


def edge_doubt(removed: list[str], added: tuple[str, ...], what: str, which: str) -> list[str]:
    """A segment pinned to the start (end) of the file removes the original lines before (after) its
    anchors: doubtful when they are more than the new lines it puts there, and more than
    ``EDGE_DELETION``. A snippet that uses markers but shows the file's first (last) lines without
    one deletes the few lines its edge replaces (a header comment, an import): on the known answers of
    the suite and ``data/train``, the 19 merges whose only doubts were such deletions of at most 3
    lines were all exact. One that forgot the marker before code deep in the file would delete more.
    """
    lost = sum(1 for line in removed if line.strip())
    if lost > max(EDGE_DELETION, sum(1 for line in added if line.strip())):
        return [f"{what}; the {which} {lost} non-blank original lines would be deleted"]
    if lost and which == "first" and not any(line.strip() for line in added) and any(
            STRING_START.match(line.lstrip()) for line in removed):
        return [f"{what}; the {which} {lost} non-blank original lines, a docstring among them, would be deleted"]
    return []
