"""A snippet copied with the line numbers of the view it came from (`cat -n`, a coding agent's file
viewer: ``     12→    return x``), the numbers cut.

Agents read files through tools that number each line and sometimes copy those lines into an edit as
they saw them. With its numbers no line of such a snippet is a line of the file, so the merge anchored
nowhere: of the 2,447 known answers' updates so numbered (`benchmarks/merge_bench.py --known ...
--numbered`), 2,239 had no candidate. Cut only where every line but the lazy markers and blank lines
carries a number, the numbers rise, and the file's own lines do not read so (a listing, a table of
numbers).
"""

from __future__ import annotations

import re

from fastapply.markers import marker_lines

_NUMBER = re.compile(r"^ *(\d+)(?:\t|\u2192|\u2502 ?)")  # `cat -n`'s tab, an agent's arrow, `bat`'s bar


def unnumbered(snippet: str, original: str, language: str | None) -> str:
    """``snippet`` with the line numbers that start each of its lines cut, where it is so numbered.

    >>> unnumbered("     4\\u2192def f():\\n     5\\u2192    return 2\\n# ...\\n", "def f():\\n    return 1\\n", None)
    'def f():\\n    return 2\\n# ...\\n'
    """
    lines = snippet.split("\n")
    numbered = [_NUMBER.match(line) for line in lines]
    markers = marker_lines(lines, language)
    shown = [match for match, line, marker in zip(numbered, lines, markers) if line.strip() and not marker]
    if not shown or not all(shown) or _numbered(original):
        return snippet
    numbers = [int(match.group(1)) for match in shown]
    if any(b <= a for a, b in zip(numbers, numbers[1:])):
        return snippet
    return "\n".join(line[match.end():] if match and not marker else line
                     for line, match, marker in zip(lines, numbered, markers))


def _numbered(text: str) -> bool:
    """Whether half the file's non-blank lines read as numbered: a listing, whose numbers are its own."""
    lines = [line for line in text.split("\n") if line.strip()]
    return 2 * sum(bool(_NUMBER.match(line)) for line in lines) >= len(lines) > 0
