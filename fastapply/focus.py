"""The part of a long file that an edit touches: cut out for the model, and its answer put back.

fastapply-small was trained on whole files of at most 100 lines and on windows of longer real edits
cut at top-level statements (``data.windows``); given a whole file of 100-400 lines it loses its place
and rewrites or drops code far from the edit (alone it wrote 6 of the suite's 97 stratified files of
101-400 lines exactly). Where the merge engine placed every segment of the update, certain or not, the
edit lands inside the lines its placements replace (``MergeResult.span``), so the model is shown only
the top-level statements around them, ``CONTEXT`` lines at least on each side, cut where ``data.windows``
cuts its training windows; ``Focus.splice`` puts its answer back between the original's lines before
and after, which it does not see and cannot change. Validation then checks the whole new file, as for
any answer.

A file is focused when it is longer than ``FOCUS_LINES`` and the window is shorter than the file; not
when an instruction comes with the update (it may ask for a change anywhere), when the merge placed
nothing, or when the window alone has syntax errors the file does not (a cut inside a string). This
module runs no model and reads no files.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapply.merge import split_lines
from fastapply.syntax import count_errors

FOCUS_LINES = 100  # files longer than this are focused: fastapply-small was trained on files up to here
CONTEXT = 3  # unchanged lines wanted on each side of the change, at least


def starts_statement(line: str) -> bool:
    """A line at indentation 0 that opens a top-level statement (not a closing brace, a comment, a
    decorator or a continuation): where a window of the file may begin or end."""
    return bool(line.strip()) and not line[0].isspace() and not line.startswith(
        (")", "]", "}", "#", "//", "/*", "*", "@"))


def around(lines: list[str], first: int, last: int) -> tuple[int, int]:
    """The tightest top-level boundaries around ``lines[first:last]`` with ``CONTEXT`` lines on each side:
    (start, end), 0 and ``len(lines)`` being boundaries too.

    >>> around(["a = 1", "def f():", "    x = 1", "    y = 2", "", "b = 2", "c = 3", "d = 4", "e = 5"], 3, 4)
    (0, 7)
    """
    start, end = max(first - CONTEXT, 0), min(last + CONTEXT, len(lines))
    while start > 0 and not starts_statement(lines[start]):
        start -= 1
    while end < len(lines) and not starts_statement(lines[end]):
        end += 1
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

    def splice(self, original: str, answer: str) -> str:
        """``original`` with the window replaced by ``answer`` (the model's new window)."""
        lines = split_lines(original)
        before, after = "".join(lines[:self.start]), "".join(lines[self.end:])
        if after and not original.endswith("\n"):
            after = after[:-1]  # the file's last line, which ``split_lines`` ended with a newline
        if after and answer and not answer.endswith("\n"):
            answer += "\n"
        return before + answer + after


def focus(original: str, span: tuple[int, int] | None, language: str | None, instruction: str = "",
          min_lines: int = FOCUS_LINES) -> Focus | None:
    """The window of ``original`` around ``span`` (a merge's ``MergeResult.span``) that the model rewrites,
    or None to give it the whole file.

    >>> text = "".join(f"v{i} = {i}\\n" for i in range(200))
    >>> focus(text, (120, 121), "python")
    Focus(start=117, end=124, lines=200)
    >>> focus(text, (120, 121), "python", "Rename every v to w.") is None
    True
    """
    if span is None or instruction.strip():
        return None
    lines = split_lines(original)
    if len(lines) <= min_lines:
        return None
    start, end = around(lines, *span)
    if end - start >= len(lines):
        return None
    window = Focus(start, end, len(lines))
    if language is not None and count_errors(window.cut(original), language) > count_errors(original, language):
        return None
    return window
