"""What a lazy marker is: comment lines in an update snippet that stand for unchanged code.

A minimal stand-in for the merge engine's marker rules (same interface); it does not merge or validate.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"^(?:(?:#|//|--|;)+|/\*+|<!--|\{/\*+)\s*(?:\.{3,}|…)")


def count_markers(text: str, language: str | None) -> int:
    """Lines that hold only a comment whose text starts with an ellipsis (``# ... existing code ...``)."""
    return sum(1 for line in text.splitlines() if _MARKER.match(line.strip()))
