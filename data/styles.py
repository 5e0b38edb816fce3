"""How an update snippet is written: lazy-marker wording and context size, varied as chat models vary them.

``snippet_for(original, expected, language, rng)`` picks a marker and a context size from ``rng`` and
makes the snippet with ``fastapply.snippet.make_snippet``. Both builders (eval suite, training set) use
it, so the model is trained on the same spread of styles it is evaluated on. It does not choose edits.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

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
