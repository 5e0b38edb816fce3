"""Making an update snippet from an edit, the way chat models write them.

Given the original file and the edited one, the snippet keeps the changed lines with a few lines of
context and replaces each unchanged stretch by a lazy-marker comment (``# ... existing code ...``).
Used by the eval-suite and training-set builders and by the merge engine's property tests. It does
not apply snippets; ``merge.py`` does that.

Example (context=1)::

    original: a\\nb\\nc\\nd\\ne\\n      edited: a\\nb\\nC\\nd\\ne\\n
    snippet:  # ... existing code ...\\nb\\nC\\nd\\n# ... existing code ...\\n
"""

from __future__ import annotations

import difflib

from fastapply.syntax import comment

DEFAULT_MARKER = "... existing code ..."


def make_snippet(
    original: str,
    edited: str,
    language: str | None,
    context: int = 3,
    marker: str = DEFAULT_MARKER,
) -> str:
    """The update snippet turning ``original`` into ``edited`` (LF text).

    ``context`` (at least 1, so that deletions stay visible) is the number of unchanged non-blank lines
    kept on each side of a change (with the blank lines among them). Each elided stretch becomes one marker line indented like its first line.
    """
    context = max(1, context)
    old_lines = original.splitlines(keepends=True)
    new_lines = edited.splitlines(keepends=True)
    keep = [False] * len(new_lines)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for j in range(_reach(new_lines, j1, -context), _reach(new_lines, j2, context)):
            keep[j] = True
    out: list[str] = []
    j = 0
    while j < len(new_lines):
        if keep[j]:
            out.append(new_lines[j])
            j += 1
            continue
        start = j
        while j < len(new_lines) and not keep[j]:
            j += 1
        stretch = new_lines[start:j]
        if all(not line.strip() for line in stretch):
            out.extend(stretch)
            continue
        out.append(marker_like(next(line for line in stretch if line.strip()), language, marker) + "\n")
    text = "".join(out)
    if text and not edited.endswith("\n") and text.endswith("\n") and keep and keep[-1]:
        text = text[:-1]
    return text


def marker_like(line: str, language: str | None, marker: str = DEFAULT_MARKER) -> str:
    """A lazy-marker comment line (no newline) indented like ``line``.

    >>> marker_like("    return x", "python")
    '    # ... existing code ...'
    """
    return line[: len(line) - len(line.lstrip())] + comment(language, marker)


def _reach(lines: list[str], edge: int, context: int) -> int:
    """The line index ``abs(context)`` non-blank lines away from ``edge`` (backwards when negative), so
    that blank lines never stand alone as the context that shows where a change is."""
    step = 1 if context > 0 else -1
    index = edge if step > 0 else edge - 1
    remaining = abs(context)
    while 0 <= index < len(lines) and remaining:
        if lines[index].strip():
            remaining -= 1
        index += step
    return index if step > 0 else index + 1
