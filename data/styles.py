"""How an update snippet is written: lazy-marker wording and context size, varied as chat models vary them.

``snippet_for(original, expected, language, rng)`` picks a marker and a context size from ``rng`` and
makes the snippet with ``fastapply.snippet.make_snippet``. Both builders (eval suite, training set) use
it, so the model is trained on the same spread of styles it is evaluated on. It does not choose edits.
``reindent_markers`` writes a snippet's markers at another indentation than the code they stand for,
as people and chat models often do (``data.mix`` applies it to a share of a training mix).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fastapply.markers import marker_lines
from fastapply.snippet import make_snippet
from fastapply.syntax import comment

# Wordings chat models use for "unchanged code here"; the first is the most common, so it is listed twice.
MARKERS = (
    "... existing code ...",
    "... existing code ...",
    "... rest of code ...",
    "...",
    "... keep existing code ...",
    "... unchanged code ...",
)
CONTEXTS = (1, 2, 3, 3, 4)  # lines of unchanged code kept around each change
# Where a marker may sit other than at its code's indentation: at column 0, or where the code line above it
# starts (after ``def make_cache():`` the marker for its body at the ``def``'s indentation).
MARKER_INDENTS = ("flush", "previous")


@dataclass(frozen=True)
class Snippet:
    text: str
    marker: str
    context: int


def has_free_marker(expected: str, language: str) -> bool:
    """Whether some marker wording does not already occur as a comment line in ``expected``
    (``snippet_for`` returns None exactly when none does)."""
    present = {line.strip() for line in expected.splitlines()}
    return any(comment(language, marker) not in present for marker in MARKERS)


def snippet_for(original: str, expected: str, language: str, rng: random.Random) -> Snippet | None:
    """An update snippet turning ``original`` into ``expected`` in a style drawn from ``rng``.

    A marker whose comment line already occurs in ``expected`` would be ambiguous; another wording is
    tried, and None is returned when every wording occurs.
    """
    context = rng.choice(CONTEXTS)
    markers = list(dict.fromkeys(MARKERS))
    first = rng.choice(MARKERS)
    markers.remove(first)
    rng.shuffle(markers)
    present = {line.strip() for line in expected.splitlines()}
    for marker in [first, *markers]:
        if comment(language, marker) not in present:
            return Snippet(make_snippet(original, expected, language, context=context, marker=marker), marker, context)
    return None


def reindent_markers(update: str, language: str, style: str) -> str:
    """``update`` with its lazy-marker lines indented by ``style`` (``MARKER_INDENTS``); other lines kept.

    >>> reindent_markers("def f():\\n    # ... existing code ...\\n    return 1\\n", "python", "flush")
    'def f():\\n# ... existing code ...\\n    return 1\\n'
    >>> reindent_markers("class A:\\n    def f(self):\\n        # ...\\n", "python", "previous")
    'class A:\\n    def f(self):\\n    # ...\\n'
    """
    if style not in MARKER_INDENTS:
        raise ValueError(f"unknown marker indentation {style!r}; known: {', '.join(MARKER_INDENTS)}")
    lines = update.split("\n")
    out, above = [], ""
    for line, marker in zip(lines, marker_lines(lines, language)):
        if marker:
            out.append((above if style == "previous" else "") + line.lstrip())
            continue
        if line.strip():
            above = line[: len(line) - len(line.lstrip())]
        out.append(line)
    return "\n".join(out)
