"""A context diff (``diff -c``, ``diff -rc``, ``cvs diff -c``) read as the unified diff it amounts to, so that
``diffs.py`` reads one form.

A context hunk shows the old lines (``*** 3,7 ****``: lines 3 to 7) and then the new ones (``--- 3,8 ----``),
each marked ``  `` kept, ``- `` deleted, ``+ `` added or ``! `` changed; a side that only keeps lines is left
out. ``as_unified`` writes each hunk as its ``@@`` hunk and each file's ``*** old`` / ``--- new`` header
as ``--- old`` / ``+++ new``, the lines a hunk saves left blank so that every line that follows keeps its
line number (a record names the line of the input its part starts on). Any other text is left as it is.

>>> print(as_unified("*** a\\n--- a\\n***************\\n*** 1,2 ****\\n  x\\n! y\\n--- 1,2 ----\\n  x\\n! z").rstrip())
--- a
+++ a
@@ -1,2 +1,2 @@
 x
-y
+z
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapply.errors import UsageError

STARS = "*" * 15  # the line before each hunk
_OLD = re.compile(r"^\*\*\* (\d+)(?:,(\d+))? \*\*\*\*$")
_NEW = re.compile(r"^--- (\d+)(?:,(\d+))? ----$")
_LINE = re.compile(r"^[ +!-] |^\\")  # a hunk's line (``\ No newline at end of file`` too)


@dataclass
class _Line:
    tag: str  # " ", "-", "+" or "!"
    text: str  # without its two marks; its CR, where it ends in one, kept
    unended: bool = False  # "\ No newline at end of file" follows it


def holds_context_hunk(text: str) -> bool:
    """Whether ``text`` holds a context diff's hunk: the line of stars, then an old range."""
    if STARS not in text:  # every edit's original is asked: most have no line of stars at all
        return False
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return any(line == STARS and _OLD.match(after) for line, after in zip(lines, lines[1:]))


def as_unified(text: str) -> str:
    """``text`` with each context diff in it written as a unified diff, line for line (the lines saved
    blank, at the hunk's end); ``text`` itself where it holds no context hunk. A hunk whose old and new
    lines do not pair up is a usage error naming its line."""
    if not holds_context_hunk(text):
        return text
    lines = text.split("\n")
    bare = [line.removesuffix("\r") for line in lines]
    out = list(lines)
    end = 0  # the end of the hunk before
    for i, line in enumerate(bare):
        if line != STARS or i + 1 >= len(bare) or not _OLD.match(bare[i + 1]):
            continue
        if i - 2 >= end and bare[i - 2].startswith("*** ") and bare[i - 1].startswith("--- "):  # the file's header
            out[i - 2], out[i - 1] = "--- " + lines[i - 2][4:], "+++ " + lines[i - 1][4:]
        end, hunk = _hunk(bare, lines, i)
        out[i:end] = hunk + [""] * (end - i - len(hunk))
    return "\n".join(out)


def _hunk(bare: list[str], lines: list[str], i: int) -> tuple[int, list[str]]:
    """The context hunk whose line of stars is ``bare[i]``: the index after it and its unified lines (the
    ``@@`` header first; each line's CR, where ``lines`` has one, kept, and the lines written here ending
    as the line of stars does)."""
    old_start = int(_OLD.match(bare[i + 1]).group(1))
    old, j = _section(bare, lines, i + 2, "-!")
    new_range = _NEW.match(bare[j]) if j < len(bare) else None
    if new_range is None:
        raise UsageError(f"the context diff's hunk at line {i + 1} has no --- line after its old lines")
    new_start = int(new_range.group(1))
    new, end = _section(bare, lines, j + 1, "+!")
    if not old:
        old = [_Line(" ", line.text, line.unended) for line in new if line.tag == " "]
    if not new:
        new = [_Line(" ", line.text, line.unended) for line in old if line.tag == " "]
    ops = _paired(old, new, i)
    counts = [sum(tag in " -" for tag, _ in ops), sum(tag in " +" for tag, _ in ops)]
    cr = lines[i][len(bare[i]):]
    header = f"@@ -{old_start},{counts[0]} +{new_start},{counts[1]} @@"
    return end, [header + cr] + [tag + text + (cr if tag == "\\" else "") for tag, text in ops]


def _section(bare: list[str], lines: list[str], j: int, tags: str) -> tuple[list[_Line], int]:
    """The old (``tags`` "-!") or new ("+!") lines of a hunk from ``bare[j]``, and the index after them. An
    empty line is an empty kept line where the section goes on after it (an editor took its spaces off)."""
    section: list[_Line] = []
    while j < len(bare):
        line = bare[j]
        if tags == "-!" and _NEW.match(line):
            break
        if line.startswith("\\") and section:
            section[-1].unended = True
        elif not line and _goes_on(bare, j, tags):
            section.append(_Line(" ", lines[j][2:]))
        elif _LINE.match(line) and line[0] in " " + tags:
            section.append(_Line(line[0], lines[j][2:]))
        else:
            break
        j += 1
    return section, j


def _goes_on(bare: list[str], j: int, tags: str) -> bool:
    """Whether a section's lines go on after the empty lines from ``bare[j]``."""
    k = next((k for k in range(j, len(bare)) if bare[k]), len(bare))
    return k < len(bare) and bool(_LINE.match(bare[k])) and bare[k][0] in " " + tags and not _NEW.match(bare[k])


def _paired(old: list[_Line], new: list[_Line], i: int) -> list[tuple[str, str]]:
    """The unified lines of a hunk's old and new lines: deletions before additions, each group of changed
    lines as its old lines deleted and its new ones added, a kept line once; ``\\ No newline at end of
    file`` after the line it follows."""
    ops: list[tuple[str, str]] = []

    def put(tag: str, line: _Line, unended: bool) -> None:
        ops.append((tag, line.text))
        if unended:
            ops.append(("\\", " No newline at end of file"))

    a = b = 0
    while a < len(old) or b < len(new):
        here, there = old[a] if a < len(old) else None, new[b] if b < len(new) else None
        if here is not None and here.tag == "-":
            put("-", here, here.unended)
            a += 1
        elif there is not None and there.tag == "+":
            put("+", there, there.unended)
            b += 1
        elif here is not None and there is not None and here.tag == there.tag == "!":
            while a < len(old) and old[a].tag == "!":
                put("-", old[a], old[a].unended)
                a += 1
            while b < len(new) and new[b].tag == "!":
                put("+", new[b], new[b].unended)
                b += 1
        elif here is not None and there is not None and here.tag == there.tag == " " and here.text == there.text:
            put(" ", here, here.unended or there.unended)
            a += 1
            b += 1
        else:
            raise UsageError(f"the context diff's hunk at line {i + 1} does not pair its old and new lines")
    return ops
