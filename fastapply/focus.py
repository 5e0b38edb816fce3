"""The part of a file that an edit touches: cut out for the model, and its answer put back.

fastapply-small was trained on whole files of at most 100 lines and on windows of longer real edits
cut at top-level statements (``data.windows``); given a whole file of 100-400 lines it loses its place
and rewrites or drops code far from the edit (alone it wrote 6 of the suite's 97 stratified files of
101-400 lines exactly), and on shorter files too it writes the lines far from the edit less surely
than the ones near it. Where the merge engine placed every segment of the update, certain or not, the
edit lands inside the lines its placements replace (``MergeResult.span``), so the model is shown only
the top-level statements around them, ``CONTEXT`` lines at least on each side, cut where ``data.windows``
cuts its training windows; where that is over ``TIGHTEN`` lines (a change inside a long class), the
whole definitions around them at any depth, if that is tighter: the class's methods around the change,
without the class's first and last lines. ``Focus.splice`` puts the answer back between the original's
lines before and after, which the model does not see and cannot change. Validation then checks the
whole new file, as for any answer. Teacher-forced on those 97 files, the release writes 21 of the 86
windows the first rule cuts exactly, and 4 of the 27 the second rule cuts tighter against 1; on the
stratified files of at most 100 lines, 17 of the 22 windows shorter than their file against 11 of the
files whole.

A file is focused when the window is shorter than the file; not when an instruction comes with the update (it may ask for a change anywhere), when the merge placed
nothing, or when a top-level window alone has syntax errors the file does not (a cut inside a string).
This module runs no model and reads no files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapply.defs import Definition, definitions
from fastapply.merge import CERTAIN, MergeResult, split, split_lines
from fastapply.segments import Segment, is_trivial
from fastapply.syntax import count_errors

CONTEXT = 3  # unchanged lines wanted on each side of the change, at least
TIGHTEN = 60  # a top-level window longer than this is cut at the definitions inside it, where that is tighter


_CLAUSE = re.compile(r"(else|elif|except|finally)\b")  # a Python statement's later clauses, at column 0 too


def starts_statement(line: str) -> bool:
    """A line at indentation 0 that opens a top-level statement (not a closing brace, a comment, a
    continuation or a later clause of one: ``else:``, ``except``): where a window of the file may begin
    or end. A decorator opens the definition under it.

    >>> [starts_statement(line) for line in ["def f():", "@cache", "    x = 1", "} else {", "except KeyError:"]]
    [True, True, False, False, False]
    """
    return bool(line.strip()) and not line[0].isspace() and not line.startswith(
        (")", "]", "}", "#", "//", "/*", "*")) and not _CLAUSE.match(line)


def around(lines: list[str], first: int, last: int) -> tuple[int, int]:
    """The tightest top-level boundaries around ``lines[first:last]`` with ``CONTEXT`` lines on each side:
    (start, end), 0 and ``len(lines)`` being boundaries too. Decorators stay with what they decorate.

    >>> around(["a = 1", "def f():", "    x = 1", "    y = 2", "", "b = 2", "c = 3", "d = 4", "e = 5"], 3, 4)
    (0, 7)
    >>> around(["a = 1", "b = 2", "@cache", "def f():", "    return 1", "", "c = 3", "@cache", "def g():"], 4, 5)
    (1, 7)
    """
    start, end = max(first - CONTEXT, 0), min(last + CONTEXT, len(lines))
    while start > 0 and not starts_statement(lines[start]):
        start -= 1
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    while end < len(lines) and not starts_statement(lines[end]):
        end += 1
    while start < end - 1 < len(lines) - 1 and lines[end - 1].startswith("@"):
        end -= 1
    return start, end


@dataclass(frozen=True)
class Focus:
    """Original lines ``[start, end)`` of a file of ``lines`` lines: the window the model rewrites."""

    start: int
    end: int
    lines: int

    @property
    def shown(self) -> list[int]:
        """The window's first and last line, 1-based, as a user reads them."""
        return [self.start + 1, self.end]

    def cut(self, text: str) -> str:
        """The window of ``text``: the original, or a file that differs from it only inside the window
        (the merge's candidate), whose lines after the window are the original's last ones."""
        lines = split_lines(text)
        body = "".join(lines[self.start:len(lines) - (self.lines - self.end)])
        return body if self.end < self.lines or text.endswith("\n") else body[:-1]

    def cut_draft(self, merged: str | None) -> str | None:
        """The window of a merge's candidate, the model's first draft (None: there is none)."""
        return None if merged is None else self.cut(merged)

    def splice(self, original: str, answer: str) -> str:
        """``original`` with the window replaced by ``answer`` (the model's new window)."""
        lines = split_lines(original)
        before, after = "".join(lines[:self.start]), "".join(lines[self.end:])
        if after and not original.endswith("\n"):
            after = after[:-1]  # the file's last line, which ``split_lines`` ended with a newline
        if after and answer and not answer.endswith("\n"):
            answer += "\n"
        return before + answer + after


def focus(original: str, update: str, merged: MergeResult | None, language: str | None,
          instruction: str = "") -> Focus | None:
    """The window of ``original`` around the lines the merge placed ``update`` in (``merged``, certain or
    not) that the model rewrites, or None to give it the whole file.

    >>> from fastapply.merge import merge
    >>> text, update = "".join(f"v{i} = {i}\\n" for i in range(200)), "# ...\\nv119 = 119\\nv120 = -1\\nv121 = 121\\n# ...\\n"
    >>> focus(text, update, merge(text, update, "python"), "python")
    Focus(start=116, end=125, lines=200)
    """
    if merged is None or merged.span is None or instruction.strip():
        return None
    lines = split_lines(original)
    window = _cut(original, lines, merged.span, language)
    if window is None or merged.confidence != CERTAIN and not _placed_inside(lines, update, window, language):
        return None
    return window


def _cut(original: str, lines: list[str], span: tuple[int, int], language: str | None) -> Focus | None:
    start, end = around(lines, *span)
    if end - start > TIGHTEN and language is not None:
        inner = within_definitions(lines, definitions(original, language), *span)
        if inner is not None and inner[1] - inner[0] < end - start:
            return Focus(*inner, len(lines))  # cut where the parser says definitions begin and end
    if end - start >= len(lines):
        return None
    window = Focus(start, end, len(lines))
    if language is not None and count_errors(window.cut(original), language) > count_errors(original, language):
        return None
    return window


def _placed_inside(lines: list[str], update: str, window: Focus, language: str | None) -> bool:
    """Whether an uncertain merge's placement can be trusted to say where the edit goes: each segment of
    the update has a line (not a trivial one) that the window holds, and no such line of the update is
    found in the original outside the window (a segment whose lines fit several places may have been put
    in the wrong one; one that anchors nowhere was put at the end)."""
    snippet = split_lines(update)
    segments = split(snippet, language, lines) or [Segment(tuple(snippet), None, None)]
    inside = {line.strip() for line in lines[window.start:window.end]}
    outside = {line.strip() for line in lines[:window.start] + lines[window.end:]}
    code = [[line.strip() for line in seg.lines if not is_trivial(line)] for seg in segments]
    return all(any(line in inside for line in seg) for seg in code) and not any(
        line in outside for seg in code for line in seg)


def within_definitions(lines: list[str], defs: list[Definition], first: int, last: int) -> tuple[int, int] | None:
    """The tightest (start, end) around ``lines[first:last]`` with ``CONTEXT`` lines on each side whose
    ends are where definitions (at any depth) begin or end, or the file's ends, and which cuts no
    definition: each is inside the window, around it or apart from it. Its first line is not blank.

    >>> code = ["class A:"] + [line for i in range(5) for line in (f"    def f{i}(self):", f"        return {i}", "")]
    >>> within_definitions(code, definitions("\\n".join(code), "python"), 8, 9)  # f2's body: f1 to f3 shown
    (4, 12)
    """
    bounds = sorted({0, len(lines)} | {d.start for d in defs} | {d.end for d in defs})
    starts = [b for b in reversed(bounds) if b <= max(first - CONTEXT, 0) and b < len(lines) and lines[b].strip()]
    ends = [b for b in bounds if b >= min(last + CONTEXT, len(lines))]
    for start in starts:
        for end in ends:
            if all(d.end <= start or d.start >= end or start <= d.start and d.end <= end
                   or d.start < start and end <= d.end for d in defs):
                return start, end
    return None
