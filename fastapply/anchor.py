"""Placing one segment of an update snippet in the original file.

A segment is the code between two lazy markers. It is placed by the original lines it repeats: its
first and last runs of repeated lines (anchors) fix the range of the original it replaces; new lines
before the first anchor or after the last are inserted there, original lines between anchors that the
segment leaves out are deleted. Lines are compared exactly (trailing whitespace aside), then ignoring
all whitespace; a segment whose lines anchor nowhere, or ambiguously, is placed by the definitions it
contains (``def foo`` replaces the original ``def foo``, see ``defplace.py``).

Every reason to doubt a placement (an anchor that appears twice, a deletion hanging on one line...)
is returned as a one-line ``doubt``; the merge is only certain when no segment has one. This module
places one segment; ``merge.py`` splits the snippet, places the segments in order and assembles them.
Where its anchors may lie is ``anchorruns.py``'s question, how its edge lines meet the original
``edges.py``'s (``fileedges.py``'s at the file's first or last line), which of several readings of its
anchors is meant ``readings.py``'s; a segment that anchors nowhere is placed at the end of its block by
``blockend.py``.

Example: original ``a b c d e``, segment ``b X d`` -> replaces ``b c d`` (lines 1..3) with ``b X d``.
"""

from __future__ import annotations

from dataclasses import replace

from fastapply.anchorruns import find_anchors
from fastapply.blockend import place_at_block_end
from fastapply.defplace import (MAY_ADD, MAY_CLOSE, MAY_KEEP, closed_definition, deleted_at_end, place_by_definitions,
                                reopened_definition, taken_leading_lines)
from fastapply.edges import (beside_anchor, cut_past_opened, cut_to_code, deletes_nothing, docstring_above_docstring,
                             read_edge, resumes_at_marker)
from fastapply.fileedges import edge_doubt
from fastapply.markers import indent_width
from fastapply.readings import keeps_names
from fastapply.segments import (Original, Placement, Segment, absorb_blank_edges, blank_run, exact_key, is_trivial,
                                loose_key)


def place(seg: Segment, index: int, orig: Original, lo: int, scope: int | None) -> Placement | None:
    """Where segment number ``index`` goes in the original after line ``lo``; None when it cannot be placed.

    ``scope`` is the original line heading the block the snippet shows the segment in (``class A:``
    above an indented marker), or None. The block only settles which of several same-named
    definitions is meant, and where a segment of new code closing the block goes; lines are anchored
    in the whole rest of the file, as a marker's indentation says where the elided code starts, not
    where it ends.
    """
    windows = [len(orig.lines)]
    if scope is not None and orig.block_end(scope) < len(orig.lines):
        windows.append(orig.block_end(scope))
    if all(is_trivial(line) for line in seg.lines):
        return place_at_block_end(seg, index, orig, lo, windows[-1], scope)
    first = None
    for key in (exact_key, loose_key):
        placement = _place_by_lines(seg, index, orig, lo, len(orig.lines), key)
        if placement is not None and not placement.doubts:
            return placement
        first = first or placement
    for hi in windows:  # definitions are matched by name, so the block may settle which one
        by_defs = place_by_definitions(seg, index, orig, lo, hi)
        if by_defs is not None and not by_defs.doubts:
            return by_defs
        first = first or by_defs
    return first or place_at_block_end(seg, index, orig, lo, windows[-1], scope)


def _place_by_lines(seg: Segment, index: int, orig: Original, lo: int, hi: int, key) -> Placement | None:
    """The segment placed by the original lines it repeats (``anchorruns.find_anchors``, ``_place_on``), its
    anchors cut to a new block's end or to their code (``edges.cut_past_opened``, ``cut_to_code``) where that
    reading has fewer doubts. Where its last anchor ends with blank lines before new lines that copy lines of
    the file (a method added after the last one, like it), the reading with those blank lines the new lines'
    own, not too doubtful, is kept as the draft, with the doubts of the other: the new definition then keeps
    the original's blank lines between it and the code after (``merge_bench.py --definitions``: 150 drafts
    exact more of 441 `end` edits; ``--methods``: 254 of 1,867 `method-last`), with no certain merge moved."""
    found = find_anchors(orig, key, [key(line) for line in seg.lines], seg.lines, lo, hi, f"segment {index + 1}")
    if found is None:
        return None
    head, tail, doubts, others = found
    own = _place_on(seg, index, orig, lo, hi, key, head, tail, [])  # with its edges' doubts only
    if others:  # doubts[0] says the anchors have other readings: moot where all place it alike, or settled
        alternatives = [_place_on(seg, index, orig, lo, hi, key, h, t, []) for h, t in others]
        if all(_writes_alike(other, own) for other in alternatives):
            doubts = doubts[1:]
        elif head is tail and (settled := _only_doubtless(seg, orig, _longest(
                [own, *alternatives], [head, *(h for h, _ in others)]))) is not None:
            return settled
    placement = replace(own, doubts=(*doubts, *own.doubts))
    if _settled(placement, index):
        return replace(placement, doubts=())
    first, last = _leaving_decorators(orig, seg.lines, head, tail)
    first = cut_past_opened(first, seg.lines) or first  # the anchors cut to a new block's end, then to their code
    first = cut_to_code(first, seg.lines, orig, key, last=False) or first
    if first is last:  # one run: both of its edges
        first = last = cut_to_code(first, seg.lines, orig, key, last=True) or first
    else:
        last = cut_to_code(last, seg.lines, orig, key, last=True) or last
    if (first, last) != (head, tail):
        if first is last and head is not tail:  # one run left: what the two said of the lines between goes
            doubts = [doubt for doubt in doubts if not doubt.startswith(f"segment {index + 1} deletes ")]
        cut = _place_on(seg, index, orig, lo, hi, key, first, last, list(doubts))
        if len(cut.doubts) < len(placement.doubts):
            return cut
    if (copied := cut_to_code(tail, seg.lines, orig, key, last=True, copies=True)) is None:
        return placement
    cut = _place_on(seg, index, orig, lo, hi, key, copied if head is tail else head, copied, list(doubts))
    return replace(cut, doubts=placement.doubts) if len(cut.doubts) <= len(placement.doubts) else placement


def _leaving_decorators(orig: Original, lines: tuple[str, ...], head: list[int], tail: list[int]):
    """The anchor runs ``head`` and ``tail`` without the decorators of an original definition that the last
    run ends in, where the new lines after it define another (``defplace.taken_leading_lines``): those are
    the new definition's own, a copy of the next one's. A last run that starts among them (or with blank
    lines before them) is dropped, the first run then the last too; one run is cut to its code before
    them where it keeps a line of code. Else the runs as they are."""
    taken = taken_leading_lines(orig, tail, lines)
    if taken is None:
        return head, tail
    _, before, decorators = taken
    if not decorators:
        return head, tail
    kept = lines[tail[1]:tail[1] + max(before, 0)]
    if head is not tail and not any(line.strip() for line in kept):
        run = head
    elif head is tail and any(not is_trivial(line) for line in kept):
        run = [tail[0], tail[1], len(kept)]
    else:
        return head, tail
    code = lines[run[1]:run[1] + run[2]]
    if any(line.strip() for line in code):  # cut to its code: the blank lines after it are the new lines'
        run = [run[0], run[1], max(i for i, line in enumerate(code) if line.strip()) + 1]
    return run, run


def _settled(placement: Placement, index: int) -> bool:
    """Whether a placement has no doubt, or only that the new lines after its last anchor replace one
    original line before the common line it ends on (``"diba"`` made ``"diba",`` and a new item before
    the list's ``]``): that line closes the block the anchor is in, and the one line before it is what
    the segment rewrites. On the 22,504 known answers, 37 merges so are all exact (maturin's
    ``pyo3_binding.rs`` in the suite); the same doubt before the first anchor is 25 exact to 5 wrong
    (a closer of whichever block came before, the anchor misplaced), so it stays. Asked only once the
    reading is chosen: among the readings of an anchor found twice the doubt still tells them apart
    (pngjs ``parser-async.js``: lifted there, one wrong merge more).
    """
    return not placement.doubts or placement.doubts == (_replaced(index, 1, "after its last anchor"),)


def _replaced(index: int, lines: int, side: str) -> str:
    """The doubt that a segment's new edge lines take the place of ``lines`` original lines on ``side``."""
    return f"segment {index + 1} replaces {lines} original line(s) {side}"


_ONE_REPLACED = _replaced(0, 1, "").removeprefix("segment 1")  # what that doubt says of one line, on either side


_MAY_REPLACE = "which may replace the code there"


def may_replace(index: int, side: str) -> str:
    """The doubt that segment number ``index``'s new lines on ``side`` ("before its first anchor", "after its
    last anchor") may replace the code the marker beside them keeps (``restate.py`` settles some)."""
    return f"segment {index + 1} has new lines {side}, {_MAY_REPLACE}"


def _place_on(seg: Segment, index: int, orig: Original, lo: int, hi: int, key, head: list[int], tail: list[int],
              doubts: list[str]) -> Placement:
    """The segment in place of the original lines from its first anchor ``head`` to its last ``tail``
    (the same run where it has one), its edges read against the original beside them."""
    where = f"segment {index + 1}"
    if key is loose_key:
        doubts.append(f"{where} matches the original only when whitespace is ignored")
    start, end = head[0], tail[0] + tail[2]
    leading, trailing = seg.lines[:head[1]], seg.lines[tail[1] + tail[2]:]
    readings = (read_edge(leading, orig.lines[lo:start], key) if seg.marker_before is not None else None,
                read_edge(trailing[::-1], orig.lines[end:hi][::-1], key) if seg.marker_after is not None else None)
    replaced = []  # (doubt, whether the edge lines are the replaced lines edited in place)
    for reading, opens, side in zip(readings, ("starts", "ends"), ("before its first anchor", "after its last anchor")):
        if reading is not None and reading.unsure:
            doubts.append(f"{where} {opens} with {reading.unsure!r}, which may be the original's or new")
        elif reading is not None and reading.reach is not None and reading.reach[1]:
            replaced.append((_replaced(index, reading.reach[1], side), reading.in_place))
    for run, resumes in [(head, None)] if head is tail else [(head, tail), (tail, None)]:
        if (taken := taken_leading_lines(orig, run, seg.lines, resumes)) is not None:
            doubts.append(f"{where} puts new lines under {taken[0].name!r}'s decorators or comments, taking them "
                          f"from it")
    reach_before, reach_after = (None if reading is None else reading.reach for reading in readings)
    blank_before, blank_after = (reading is not None and reading.blank for reading in readings)
    if seg.marker_before is None:
        start, doubt = 0, edge_doubt(orig.lines[:head[0]], leading, f"{where} does not start with a marker", "first")
        doubts += doubt
    elif reach_before is not None:
        start -= sum(reach_before)
    else:
        start, doubt = reopened_definition(orig, start, leading, lo, where)
        doubts += doubt
        inserted = seg.lines[head[1]].strip() and beside_anchor(leading, seg.lines[head[1]])
        if start == head[0] and any(line.strip() for line in leading) and not inserted:
            doubts.append(may_replace(index, "before its first anchor"))
    if seg.marker_after is None:
        lost = deleted_at_end(orig, end, seg.lines, trailing)
        last = len(orig.lines)  # ending on a line of code, it leaves the blank lines that end the file, unshown, there
        last -= blank_run(orig.lines, last - 1, -1, end) if seg.lines[-1].strip() else 0
        end, doubt = last, edge_doubt(orig.lines[end:], trailing, f"{where} does not end with a marker", "last")
        if not doubt and lost:  # a few lines, but a definition among them
            doubt = [f"{where} does not end with a marker; {lost!r} after its last anchor would be deleted"]
        doubts += doubt
    elif reach_after is not None:
        end += sum(reach_after)
    else:
        unextended = end
        end, doubt = closed_definition(orig, end, trailing, seg.marker_after, hi, where, seg.pasted)
        doubts += doubt
        inserted = seg.lines[tail[1] + tail[2] - 1].strip() and resumes_at_marker(orig.lines[end:hi],
                                                                                  seg.marker_after, trailing)
        if end == unextended and any(line.strip() for line in trailing) and not inserted:
            doubts.append(may_replace(index, "after its last anchor"))
        elif inserted and orig.language == "python" and docstring_above_docstring(
                seg.lines[tail[1] + tail[2] - 1], trailing, orig.lines[end:hi]):
            doubts.append(f"{where} adds a docstring above the one after its last anchor, which it may replace")
    matched_edges = (head[1] == 0 and seg.marker_before is not None and start == head[0] or blank_before,
                     tail[1] + tail[2] == len(seg.lines) and end == tail[0] + tail[2] or blank_after)
    nothing_deleted = deletes_nothing(orig.lines[start:end], seg.lines, key)  # blank edges do not change it
    start, end, doubt = absorb_blank_edges(orig, seg, (start, end), matched_edges, (lo, hi), where, nothing_deleted)
    doubts += doubt
    keeps_all = replaced and nothing_deleted
    doubts += [doubt for doubt, in_place in replaced if not (in_place and keeps_all)]
    lines = list(seg.lines)
    matched = []
    for a, b, size in ([head] if head is tail else [head, tail]):
        for offset in range(size):
            if key is loose_key:  # keep the original's own whitespace on lines it already had
                lines[b + offset] = orig.lines[a + offset]
            matched.append((indent_width(seg.lines[b + offset]), a + offset))
    return Placement(start, end, tuple(lines), tuple(doubts), tuple(matched))


def _writes_alike(a: Placement, b: Placement) -> bool:
    """Whether two placements of a segment write the same lines over the same original range: then
    which reading of its anchors is meant is moot (a segment that ends the file, ending on a line the
    file has twice, is placed alike from either; on the 22,504 known answers, 8 merges, all exact)."""
    return (a.start, a.end, a.lines) == (b.start, b.end, b.lines)


def _longest(placements: list[Placement], runs: list[list[int]]) -> list[Placement]:
    """The placements on the anchor runs (``[original line, segment line, length]``, one each) as long as the
    longest: one that anchors fewer of the segment's lines reads some lines of the file as new there (a
    `return NULL;` / `}` run at another function's end, where the five-line run's place has the line the
    snippet changes after it: taken as the only reading with no doubt, the edit went into that function)."""
    longest = max(run[2] for run in runs)
    return [placement for placement, run in zip(placements, runs) if run[2] == longest]


def _only_doubtless(seg: Segment, orig: Original, placements: list[Placement]) -> Placement | None:
    """Of the placements of a segment on each place its one anchor run occurs (each with its own
    doubts), the only one without a doubt, where the segment has a marker on both sides and that
    placement keeps the name of every definition it rewrites; else None.

    A segment anchored on one line the file has several times (``return isinstance(other, MaxKey)``
    in two methods) with new lines around it fits where those lines read as the original's context or
    its lines edited in place, and leaves doubts elsewhere. On the 22,504 known answers, 43 merges are
    settled so, all exact. A segment with no marker on one side reaches the file's edge from any of
    them, and the one deleting least is not always meant (a struct folded into the function above it,
    in ormsgpack and tokenizers): without that condition 33 more exact and 4 wrong. A reading that
    renames the definition whose lines it edits may be a new function added beside a like one
    (``function II`` after ``function HH``): without that check 4 more exact and 3 wrong. Nor where
    another place's only doubts are that its new lines may replace the code beside them (``may_replace``)
    or that the marker after them may keep the rest of the definition they end (``defplace.MAY_KEEP``):
    those come of the marker's indentation against the code there, and agents write every marker at
    column 0 (``return None`` at the end of two functions, a line added after it: the place whose next
    code is not at column 0 lost). On agent-style snippets of real Python files (``runs/s77/hunt.py``)
    25 certain merges, wrong, are likely so and 17 exact ones; on the known answers, one exact. Nor where
    another's only doubt is that the lines it shows above a decorated definition may add to its decorators
    (``defplace.MAY_ADD``): ``def raw_mode(self):`` in an abstract class under ``@abstractmethod`` and in a
    subclass bare, ``@traced`` shown above it, was put on the subclass's (``runs/s77/hunt2.py``: 3 certain
    and wrong of 288 decorators added, none after; the known answers did not move). Nor where another's
    only doubt is that its new lines take the place of one original line (``_replaced``): a changed line
    shown under a `try:`, a `return` or a docstring's line fits where those meet the anchor too, inserted
    there (``merge_bench.py --functions``: 8 certain and wrong merges of 1,000 -> 3; ``--imports``: 14 of
    3,000 -> 3, and 2 certain and exact ones likely; the known answers and the other benches did not move).
    """
    doubtless = [p for p in placements if not p.doubts]
    if seg.marker_before is None or seg.marker_after is None or len(doubtless) != 1:
        return None
    layout_only = (_MAY_REPLACE, MAY_KEEP, MAY_CLOSE, MAY_ADD, _ONE_REPLACED)
    if any(p.doubts and all(any(why in doubt for why in layout_only) for doubt in p.doubts) for p in placements):
        return None  # another place doubted only by the marker's indentation or the lines shown beside it
    only = doubtless[0]
    return only if keeps_names(orig, only.start, only.end, only.lines) else None
