"""A configuration file merged as code: the keys of a snippet with markers that is no path of keys.

A snippet with markers that is not a path of keys (``keyed.marked_keys``: a block the file lacks, a list
item) is merged as code, and then a key line at the end of its code takes the place of the one a marker
keeps beyond it (``set_in_place``: a mapping holds a key once); where it deletes the file's first (last)
keys by showing no marker above (below) its code, the rule for code (a few lines at an edge, an import
the snippet replaces), ``edge_keys`` doubts it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from fastapply.keylines import CONFIG, TOML_HEADER, is_content, key_entry, key_value, one_line_at, restyled
from fastapply.markers import indent_width
from fastapply.segments import Placement

_MAPPINGS = (*CONFIG, "css")  # whose keys ``set_in_place`` keeps once


def set_in_place(original: list[str], placements: list[Placement], language: str | None) -> list[Placement]:
    """The placements of a merge, where a line of the snippet that sets a key has, under the same header,
    the file's line of that key kept beside it (a marker keeps it: ``jobs:`` / ``  test:`` /
    ``    runs-on: macos-latest`` / ``    # ...``), with the snippet's line in place of the kept one: a
    mapping holds a key once, and the file meant holds the key where it was, valued as the snippet says.
    The snippet's line is the first or last of its code, the kept line beyond it (``_beside``); both
    one-line values; a JSON line keeps the file's comma. A CSS rule's declarations the same (``color:
    red;`` set above the ``color: blue;`` kept below it would lose to it), but a declaration after the one
    kept above it is left there (it wins, and may be its fallback). Placements as they are otherwise."""
    if language not in _MAPPINGS or any(b.start < a.end for a, b in zip(placements, placements[1:])):
        return placements  # a file of no known language may hold a key twice (systemd's `After=`)
    merged: list[tuple[str, int | None, tuple[int, int] | None]] = []  # line, kept original line, or snippet's
    pos = 0
    for n, placement in enumerate(placements):
        merged += [(original[j], j, None) for j in range(pos, placement.start)]
        merged += [(line, None, (n, k)) for k, line in enumerate(placement.lines)]
        pos = placement.end
    merged += [(original[j], j, None) for j in range(pos, len(original))]
    lines = [line for line, _, _ in merged]
    groups: dict[tuple, list[int]] = {}
    for i, key in _scoped_keys(lines, language):
        groups.setdefault(key, []).append(i)
    moves: dict[tuple[int, int], tuple[int, str]] = {}  # the snippet's line -> (the kept line, its new text)
    for group in groups.values():
        new = [i for i in group if merged[i][2] is not None]
        kept = [i for i in group if merged[i][1] is not None]
        if len(new) == 1 and len(kept) == 1 and all(one_line_at(lines, i, language) for i in (*new, *kept)) \
                and _beside(placements, merged[new[0]][2], merged[kept[0]][1], len(original), language != "css"):
            line, j = lines[new[0]], merged[kept[0]][1]
            moves[merged[new[0]][2]] = (j, restyled(line, original[j], language))
    if not moves:
        return placements
    out = [replace(placement, lines=tuple(line for k, line in enumerate(placement.lines) if (n, k) not in moves))
           for n, placement in enumerate(placements)]
    out += [Placement(j, j + 1, (line,)) for j, line in moves.values()]
    return sorted(out, key=lambda placement: (placement.start, placement.end))


def edge_keys(original: list[str], placements: list[Placement], language: str | None) -> list[str]:
    """Doubts for a merge of a YAML, TOML or JSON file that deletes the file's first (last) lines, before
    (after) the snippet's first (last) line, putting nothing in their place: a snippet with markers that
    shows no marker above ``jobs:`` deletes ``name:`` and ``on:`` by the rule for code (a few lines at an
    edge, an import the snippet replaces), where a configuration's snippet more likely leaves them unsaid."""
    if language not in CONFIG or not placements:
        return []
    doubts = []
    first, last = placements[0], placements[-1]
    if first.start == 0 and first.lines:
        shown = next((j for j in range(first.end) if original[j].rstrip() == first.lines[0].rstrip()), 0)
        lost = sum(is_content(line) for line in original[:shown])
        if lost:
            doubts.append(f"the snippet starts at {first.lines[0].strip()!r} with no marker above it, deleting the "
                          f"file's {lost} lines of keys before it")
    if last.lines and not any(line.strip() for line in original[last.end:]):  # to the end, but its blank lines
        shown = next((j for j in range(len(original) - 1, last.start - 1, -1)
                      if original[j].rstrip() == last.lines[-1].rstrip()), len(original) - 1)
        lost = sum(is_content(line) for line in original[shown + 1:])
        if lost:
            doubts.append(f"the snippet ends at {last.lines[-1].strip()!r} with no marker below it, deleting the "
                          f"file's {lost} lines of keys after it")
    return doubts


def _beside(placements: list[Placement], new: tuple[int, int], kept: int, length: int, above: bool = True) -> bool:
    """Whether the snippet's line ``new`` (placement, line) is its placement's last line, and the file's line
    ``kept`` among those kept after it (a marker below it keeps them), or (``above``) its first and ``kept``
    before it: a line inside the snippet's code, with lines of the file shown after it, is where the
    snippet puts it."""
    n, k = new
    shown = [i for i, line in enumerate(placements[n].lines) if line.strip()]
    after = placements[n + 1].start if n + 1 < len(placements) else length
    before = placements[n - 1].end if n else 0
    return (k == shown[-1] and placements[n].end <= kept < after
            or above and k == shown[0] and before <= kept < placements[n].start)


def _scoped_keys(lines: list[str], language: str | None) -> Iterator[tuple[int, tuple]]:
    """(line, (its header lines, its indent, its key)) for each key line of a file: YAML's, JSON's and
    CSS's headers the nearest shallower lines above it, each in turn (a CSS rule's selector); TOML's its
    section's header."""
    if language in ("yaml", "json", "css"):
        stack: list[tuple[int, int]] = []  # (indent, line) of the lines above, each shallower
        for i, line in enumerate(lines):
            if not line.strip() or line.lstrip().startswith(("#", "//", "/*")):
                continue  # a JSON object's `{` and a YAML document's `---` open a scope of their own
            width = indent_width(line)
            while stack and stack[-1][0] >= width:
                stack.pop()
            entry = key_entry(line, language)
            if entry is not None:
                yield i, (tuple(j for _, j in stack), width, entry[0])
            stack.append((width, i))
        return
    header = -1
    for i, line in enumerate(lines):
        if TOML_HEADER.match(line):
            header = i
        elif (entry := key_value(line, language)) is not None and is_content(line):
            yield i, ((header,), 0, entry[0])
