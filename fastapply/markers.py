"""What a lazy marker is: the comments in an update snippet that stand for unchanged code.

Chat models elide unchanged code with lines such as ``# ... existing code ...``,
``// ... rest of the file ...``, ``/* ... */``, ``{/* ... */}`` (JSX) or a bare ``...``. This module is the
one place that decides whether a line is such a marker; the merge engine splits snippets with it and the
validator looks for markers left in a model's output. It does not merge or validate anything itself.

A marker is a whole line holding only a comment (in any of the usual comment syntaxes, whatever the
file's language) whose text starts with an ellipsis, or is one of the usual phrases (``existing code``,
``rest of code``...) with an ellipsis or alone. A comment that merely ends with ``...`` ("# retry...") is
not a marker. A bare ``...`` line is a marker, except in Python where it is the Ellipsis statement when
it is the whole body of a block (``def f():`` / ``    ...``).
"""

from __future__ import annotations

import re

# Comment wrappers a marker may use, whatever the file's language: the text inside is group "body".
_COMMENT_FORMS = [
    re.compile(r"^(?:#|//|--|;)+\s*(?P<body>.*?)\s*$"),
    re.compile(r"^\{?\s*/\*+\s*(?P<body>.*?)\s*\*+/\s*\}?\s*,?$"),
    re.compile(r"^<!--\s*(?P<body>.*?)\s*-->$"),
]

_ELLIPSIS = r"(?:\.{3,}|…)"
# Phrases that mean "unchanged code here"; case-insensitive, matched as the whole comment text.
_PHRASE = (
    r"(?:(?:keep|keeping|retain)\s+)?(?:the\s+)?"
    r"(?:(?:existing|remaining|previous|unchanged|other|same|original)\s+)"
    r"(?:code|lines|methods|functions|imports|content|implementation|logic|fields|properties|members|tests)"
    r"(?:\s+(?:here|unchanged|as\s+before|stays\s+the\s+same|remains\s+the\s+same))?"
    r"|rest\s+of\s+(?:the\s+)?(?:code|file|function|method|class|module|body|implementation|component)"
    r"(?:\s+(?:here|unchanged|as\s+before|remains\s+the\s+same))?"
    r"|(?:code\s+)?unchanged|(?:no\s+changes?|same\s+as\s+before)"
)
_BODY = re.compile(
    rf"^(?:{_ELLIPSIS}.*|\(?(?:{_PHRASE})\)?\s*{_ELLIPSIS}?|{_PHRASE})$",
    re.IGNORECASE,
)
_MAX_BODY = 120  # longer comments are prose, not markers
# Marker comments inside a line of code, e.g. `foo(a, /* ... */)` or `x = {  // ... existing code ...`.
_INLINE = re.compile(
    rf"(?:/\*+\s*{_ELLIPSIS}[^*]*\*+/|(?:#|//)\s*{_ELLIPSIS}.*$|(?:#|//)\s*(?:{_PHRASE})\s*{_ELLIPSIS}?\s*$)",
    re.IGNORECASE,
)


def _comment_body(stripped: str) -> str | None:
    for form in _COMMENT_FORMS:
        match = form.match(stripped)
        if match:
            return match.group("body")
    return None


def is_marker_text(stripped: str) -> bool:
    """Whether one stripped line is a lazy-marker comment (bare ``...`` included).

    >>> is_marker_text("// ... existing code ..."), is_marker_text("# retry later..."), is_marker_text("...")
    (True, False, True)
    """
    if re.fullmatch(_ELLIPSIS, stripped):
        return True
    body = _comment_body(stripped)
    if body is None or len(body) > _MAX_BODY:
        return False
    return bool(_BODY.match(body))


def marker_lines(lines: list[str], language: str | None) -> list[bool]:
    """For each line (with or without its newline), whether it is a lazy marker in ``language``."""
    stripped = [line.strip() for line in lines]
    flags = [is_marker_text(s) if s else False for s in stripped]
    if language == "python":
        for i, s in enumerate(stripped):
            if flags[i] and re.fullmatch(_ELLIPSIS, s) and _is_python_ellipsis_body(lines, i):
                flags[i] = False
    return flags


def _is_python_ellipsis_body(lines: list[str], i: int) -> bool:
    """A bare ``...`` that is the whole body of a Python block: after a line ending in ``:``, and
    followed by a dedent or the end of the text."""
    prev = next((line for line in reversed(lines[:i]) if line.strip()), None)
    if prev is None or not prev.split("#")[0].rstrip().endswith(":"):
        return False
    nxt = next((line for line in lines[i + 1:] if line.strip()), None)
    return nxt is None or indent_width(nxt) < indent_width(lines[i])


def has_inline_marker(line: str) -> bool:
    """Whether a line of code carries a marker comment beside its code (``foo(a, /* ... */)``)."""
    return bool(_INLINE.search(line))


def only_markers(text: str, language: str | None) -> bool:
    """Whether ``text`` is lazy markers and blank lines alone: an update with no code in it.

    >>> only_markers("# ... existing code ...\\\\nb = 2", "python"), only_markers("# ...\\nb = 2\\n", "python")
    (True, False)
    """
    lines = text.splitlines()
    flags = marker_lines(lines, language)
    return any(flags) and all(flag or not line.strip() for line, flag in zip(lines, flags))


def count_markers(text: str, language: str | None) -> int:
    """Whole-line markers plus code lines carrying an inline marker comment."""
    lines = text.splitlines()
    flags = marker_lines(lines, language)
    return sum(1 for line, flag in zip(lines, flags) if flag or (line.strip() and has_inline_marker(line)))


def indent_width(line: str) -> int:
    """Width of a line's leading whitespace, tabs counting 8."""
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())
