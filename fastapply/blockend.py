"""Placing a segment that anchors nowhere by the end of its block: its closing lines (``}``, ``end``) are
the block's own, or it is new code that goes last in the block (or the file) the marker after it
closes; and, the mirror, a snippet's first lines that only open blocks (``{`` of a JSON file) are the
file's own first lines. ``anchor.py`` turns to it when a segment's lines repeat no original line it
can anchor on.
"""

from __future__ import annotations

from fastapply.fileedges import edge_doubt
from fastapply.markers import indent_width
from fastapply.segments import (Original, Placement, Segment, absorb_blank_edges, blank_run, exact_key,
                                is_closer)


def place_at_block_end(seg: Segment, index: int, orig: Original, lo: int, hi: int,
                       scope: int | None) -> Placement | None:
    """Place a segment that anchors nowhere by the end of its block: its closing lines (``}``, ``end``)
    are the block's own; with none, it goes last in the block that the marker after it closes (or last
    in the file, doubtfully, when the snippet ends with it; when it opens with closing lines, in place
    of what follows the file's last copy of them, a doubt only where that deletes more than a segment
    with no marker after it may)."""
    if seg.marker_before is None and scope is None and seg.marker_after is not None:
        return _place_at_file_start(seg, index, orig)
    body = [line for line in seg.lines if line.strip()]
    closers = 0
    while closers < len(body) and is_closer(body[-1 - closers]):
        closers += 1
    closers = min(closers, _unclosed(body))
    if scope is not None:
        limit = hi
        if closers and (indent_width(body[-1]) < indent_width(orig.lines[scope]) or hi <= lo):
            # the marker deep inside, `}` closing the function; or the scope a signature of several lines, ended
            outer = _header_at(orig, lo, indent_width(body[-1]))
            limit = orig.block_end(outer) if outer is not None else limit
    elif closers and (seg.marker_before or 0) > indent_width(body[-1]) and (
            outer := _header_at(orig, lo, indent_width(body[-1]))) is not None:
        limit = orig.block_end(outer)  # no block known above the marker deep inside one: they close the one around it
    elif seg.marker_after is None:
        limit = len(orig.lines)
    else:
        return None
    limit -= blank_run(orig.lines, limit - 1, -1, lo)
    if closers:
        own = [i for i in range(lo, limit) if orig.lines[i].strip()][-closers:]
        if [exact_key(orig.lines[i]) for i in own] != [exact_key(line) for line in body[-closers:]]:
            return None
        # blank lines the segment shows beside them are the original's own there, or a doubt
        start, end, doubts = absorb_blank_edges(orig, seg, (own[0], limit), (False, False), (lo, len(orig.lines)),
                                                f"segment {index + 1}")
        if closers == len(body) and (seg.marker_before or 0) <= indent_width(body[0]):
            # only closing lines, after a marker that is not inside their block: they fit after any block,
            # and the snippet may as well mean that the code before them is deleted
            doubts.append(f"segment {index + 1} only repeats closing lines")
        elif _one_line_changed(orig, body[:-closers], lo, own[0]):
            # new code that is the block's last lines with one line changed (a `#[cfg] { ... }` block of
            # trivial lines around it): it may as well replace them as follow them
            doubts.append(f"segment {index + 1} adds code before the block's closing lines that is the code there "
                          f"with one line changed (it may replace it)")
        return Placement(start, end, seg.lines, tuple(doubts))
    if scope is None:
        # blank lines a snippet ends with, no marker after them, are the file's last: its own in place of the original's
        end = len(orig.lines) if seg.marker_after is None and not seg.lines[-1].strip() else limit
        own = last_closers(orig.lines, body, lo, limit)
        if own is not None:
            # the snippet's last segment opens with closing lines and goes on with new code (eventemitter3
            # ``index.d.ts``: `}` then `module.exports = ...`): the file's last such lines are those, and
            # the code after them is the new end of the file, which may replace a few lines as any
            # segment with no marker after it may (``edge_doubt``)
            opening = _leading_closers(body)
            after = [line for line in orig.lines[own:limit] if line.strip()][opening:]
            doubts = edge_doubt(after, tuple(body[opening:]), f"segment {index + 1} anchors only on the file's "
                                f"last closing lines, with no marker after it", "last")
            return Placement(own, end, seg.lines, tuple(doubts))
        return Placement(limit, end, seg.lines, (f"segment {index + 1} anchors nowhere; it was added at the end",))
    if seg.marker_after is not None and seg.marker_after > indent_width(orig.lines[scope]):
        return None  # the marker after it is still inside the block: its place there is unknown
    if limit > lo and is_closer(orig.lines[limit - 1]) and indent_width(orig.lines[limit - 1]) == indent_width(
            orig.lines[scope]):
        limit -= 1  # before the block's own closing line
    return Placement(limit, limit, seg.lines, (f"segment {index + 1} anchors nowhere; it was added at the end of "
                                               f"the block {orig.lines[scope].strip()!r}",))


def _one_line_changed(orig: Original, body: list[str], lo: int, limit: int) -> bool:
    """Whether new lines put before the original line ``limit`` are, but for one of them, the non-blank
    original lines right above it, after ``lo``."""
    above = [i for i in range(lo, limit) if orig.lines[i].strip()][-len(body):] if body else []
    return len(above) == len(body) > 1 and sum(
        exact_key(orig.lines[i]) != exact_key(line) for i, line in zip(above, body)) == 1


def _header_at(orig: Original, lo: int, width: int) -> int | None:
    """The line heading the block at indentation ``width`` that goes on past line ``lo``: the nearest line
    above it that is not right of ``width``, where it is at ``width`` and heads such a block."""
    for j in range(lo - 1, -1, -1):
        line = orig.lines[j]
        if line.strip() and not line.startswith("#") and indent_width(line) <= width:  # not C's `#else`
            return j if indent_width(line) == width and orig.block_end(j) > lo else None
    return None


def _place_at_file_start(seg: Segment, index: int, orig: Original) -> Placement | None:
    """The snippet opens with lines that only open blocks (``{`` of a JSON file, then a marker inside
    it): the file's own first lines, when they are the same. The mirror of closing lines ending the
    snippet; a doubt where the marker after them is not inside their block (it may stand for nothing)."""
    body = [line for line in seg.lines if line.strip()]
    if not body or not all(_is_opener(line) for line in body):
        return None
    rows = [i for i, line in enumerate(orig.lines) if line.strip()][:len(body)]
    if [exact_key(orig.lines[i]) for i in rows] != [exact_key(line) for line in body]:
        return None
    start, end, doubts = absorb_blank_edges(orig, seg, (0, rows[-1] + 1), (True, False), (0, len(orig.lines)),
                                            f"segment {index + 1}")
    if seg.marker_after <= indent_width(body[-1]):
        doubts.append(f"segment {index + 1} only repeats opening lines")
    return Placement(start, end, seg.lines, tuple(doubts))


def _is_opener(line: str) -> bool:
    """A line that only opens blocks: ``{``, ``[``, ``({``."""
    stripped = line.strip()
    return 0 < len(stripped) <= 3 and all(char in "([{" for char in stripped)


def last_closers(lines: list[str], body: list[str], lo: int, limit: int) -> int | None:
    """Where the last copy in ``lines[lo:limit]`` of the closing lines that open ``body`` (the non-blank
    lines of a segment that ends the snippet) starts, when new code follows them in ``body``; None when
    ``body`` does not open with closing lines or the original has them nowhere there."""
    opening = _leading_closers(body)
    if not opening:
        return None
    keys = [exact_key(line) for line in body[:opening]]
    rows = [i for i in range(lo, limit) if lines[i].strip()]
    for start in range(len(rows) - opening, -1, -1):
        if [exact_key(lines[i]) for i in rows[start:start + opening]] == keys:
            return rows[start]
    return None


def _leading_closers(body: list[str]) -> int:
    """How many of the segment's first lines only close blocks, when code that is not a closer follows."""
    count = next((i for i, line in enumerate(body) if not is_closer(line)), len(body))
    return count if count < len(body) else 0


def _unclosed(lines: list[str]) -> int:
    """How many more blocks the lines close than they open, counting brackets and Ruby's ``end``
    (strings and comments are not told apart; this only bounds how many closing lines are the block's)."""
    depth = deepest = 0
    for line in lines:
        for char in line:
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                deepest = min(deepest, depth)
        if line.strip() == "end":
            depth -= 1
            deepest = min(deepest, depth)
    return -deepest
