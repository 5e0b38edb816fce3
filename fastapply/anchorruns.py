"""Finding a segment's anchors: the runs of original lines its first and last lines repeat.

A run is ``[original line, segment line, length]``. The first anchor is the longest run of the segment's
opening lines found in the original (or, where the segment opens with new code, its first lines that
match), the last likewise from its end; every place they occur is a candidate, and a (first, last) pair
of candidates in order is a reading. ``find_anchors`` returns the reading taken, the doubts about it (an
anchor found more than once, a deletion hanging on a one-line anchor...) and the other readings, which
``anchor.py`` places too; ``readings.py`` settles some of them.
"""

from __future__ import annotations

import difflib

from fastapply.readings import NEAR_READING, covers_repeated_name, cut_definition, only_clean_reading
from fastapply.segments import Original, is_trivial

# Original lines a segment may delete between its first (last) anchor and the rest of it, where that anchor is
# one line, before it is a doubt: a line the file has once, far from the code around it, may be a new line
# that happens to be the file's (a CSS rule's `margin: 3em 0 4em 0;`, 68 lines below the rule the snippet
# shows, deleted them all, certain). On the known answers of the suite and `data/train` it demotes one wrong
# certain merge and three exact ones (commits that delete 60 to 198 lines, shown that way).
FAR_DELETION = 20


def find_anchors(orig: Original, key, skeys: list[str], lines: tuple[str, ...], lo: int, hi: int, where: str):
    """The segment's first and last anchors in original[lo:hi] as ``[original line, segment line, length]``
    runs, with the doubts about them and the other readings of them (``(first, last)`` pairs; where there
    are any, the first doubt says so); None when no line anchors.

    The first anchor is the longest run of the segment's opening lines found in the original (or,
    when the segment opens with new code, its first matching non-trivial lines); the last likewise
    from its end. Every place where the opening (closing) lines occur is a candidate; the anchors are
    certain only when exactly one (first, last) pair of candidates is in order.
    """
    n = len(skeys)
    heads = _runs(orig, key, skeys, lo, hi, forward=True)
    tails = _runs(orig, key, skeys, lo, hi, forward=False)
    if not heads or not tails:  # new or common lines at an edge: anchor on the first (last) matching block
        matcher = difflib.SequenceMatcher(is_trivial, orig.keys(key)[lo:hi], skeys, autojunk=False)
        blocks = [(b, size) for _, b, size in matcher.get_matching_blocks()
                  if size and not all(is_trivial(line) for line in lines[b:b + size])]
        if not heads:
            limit = min((t[1] for t in tails), default=n)
            heads = _placed_in_order(orig, key, skeys, lo, hi, [(b, size) for b, size in blocks if b + size <= limit],
                                     lambda run: not tails or any(_fit(lines, run, t) for t in tails))
        if not tails:
            limit = max((h[1] + h[2] for h in heads), default=0)
            tails = _placed_in_order(orig, key, skeys, lo, hi, [(b, size) for b, size in blocks if b >= limit][::-1],
                                     lambda run: not heads or any(_fit(lines, h, run) for h in heads))
        if not heads and not tails:
            return None
        if not heads or not tails:  # one anchor run only: it is both the first and the last
            runs = heads or tails
            if len(runs) == 1:
                return runs[0], runs[0], [], []
            shown = lines[runs[0][1]].strip()
            return runs[0], runs[0], [f"{where}: its anchor {shown!r} appears {len(runs)} times"], [
                (run, run) for run in runs[1:]]
    if heads[0][1] == 0 and heads[0][2] == n:  # the whole segment is original code
        return heads[0], heads[0], _unchanged_doubts(orig, key, skeys, heads, lo, hi, where), []
    # A reading is a (first, last) pair of candidates in order; runs may be cut short, as the lines
    # where they meet may be new code that merely looks like the original (a copied function).
    fits = [(h, t, fit) for h in heads for t in tails for fit in [_fit(lines, h, t)] if fit is not None]
    if not fits:  # its last lines are found only before its first (a new function like the one it follows, the
        # lines it shows above it): its first lines anchor it alone, and what follows them is new
        return heads[0], heads[0], [f"{where}: its last lines are found only before its first"], []
    readings = {(h[0], t[0] + t[2]) for h, t, _ in fits}
    # Of several readings, the one replacing the fewest lines is taken when every other encloses it:
    # the others would delete a copy of an anchor with all the code between. Not when that reading
    # changes nothing, though (the snippet may well mean the deletion), nor on short anchors.
    h, t, fit = min(fits, key=lambda fit: (fit[1][0] + fit[1][2] - fit[0][0], -fit[0][2] - fit[1][2]))
    head, tail = _trimmed(h, t, fit)
    start, end = head[0], tail[0] + tail[2]
    doubts, others = [], []
    if len(readings) > 1:
        longest = (max(f[0][2] for f in fits), max(f[1][2] for f in fits))
        enclosed = all(s <= start and e >= end for s, e in readings) and (h[2], t[2]) == longest and min(
            _solid(lines, head), _solid(lines, tail)) >= 2 and not _repeats(skeys, head) and not _repeats(skeys, tail)
        no_op = [k for k in orig.keys(key)[start:end] if k.strip()] == [  # at most blank lines change
            k for k in skeys[head[1]:tail[1] + tail[2]] if k.strip()]
        which = "first" if len({s for s, _ in readings}) > 1 else "last"
        run = head if which == "first" else tail
        run_keys = skeys[run[1]:run[1] + run[2]]
        # A run opened by a blank line anchors on its code, unless a same-named definition may be meant.
        anchors_on_code = bool(run_keys[0].strip()) or any(k.strip() for k in run_keys) and not covers_repeated_name(
            orig, start, end)
        near = any(0 < (e - s) - (end - start) <= NEAR_READING for s, e in readings if s <= start and e >= end)
        settled = enclosed and not no_op or anchors_on_code and not near and only_clean_reading(
            orig, key, skeys, [_trimmed(*fit) for fit in fits], (head, tail))
        if not settled:
            shown = next((line.strip() for line in lines[run[1]:run[1] + run[2]] if line.strip()), "")
            doubts.append(f"{where}: its {which} anchor {shown!r} appears more than once")
            others = [_trimmed(*fit) for fit in fits if (fit[0][0], fit[1][0] + fit[1][2]) != (start, end)]
    removed = tail[0] - head[0] - head[2]
    added = tail[1] - head[1] - head[2]
    if removed > added and any(_solid(lines, run) < 2 and not _unique_line(orig, key, lines, run)
                               for run in (head, tail)):
        doubts.append(f"{where} deletes original lines {head[0] + head[2] + 1}-{tail[0]} on a one-line anchor")
    elif removed - added > FAR_DELETION and any(_solid(lines, run) < 2 for run in (head, tail)):
        doubts.append(f"{where} deletes {removed - added} original lines ({head[0] + head[2] + 1}-{tail[0]}) that "
                      f"a one-line anchor sets apart from the rest of it")
    elif head is not tail and (cut := cut_definition(orig, key, skeys, lines[-1], head, tail)) is not None:
        doubts.append(f"{where} deletes the start of {cut!r} and keeps the rest of it")
    return head, tail, doubts, others


def _placed_in_order(orig: Original, key, skeys: list[str], lo: int, hi: int, blocks: list[tuple[int, int]],
                     in_order) -> list[list[int]]:
    """The places ``[original line, segment line, length]`` of the first of ``blocks`` (segment line,
    length) that has some where ``in_order`` (with the other edge's runs, ``_fit``); a block whose every
    place is out of order anchors nothing, and the next one may. Empty where none has."""
    for b, size in blocks:
        places = orig.occurrences(key, skeys[b:b + size], lo, hi)
        runs = [run for run in ([p, b, size] for p in places) if in_order(run)]
        if runs:
            return runs
    return []


def _trimmed(head: list[int], tail: list[int], fit: tuple[int, int]) -> tuple[list[int], list[int]]:
    """A candidate (first, last) pair of anchor runs cut to the lengths ``fit`` gives (``_fit``): the first
    run keeps its start, the last its end."""
    k, m = fit
    return [head[0], head[1], k], [tail[0] + tail[2] - m, tail[1] + tail[2] - m, m]


def _fit(lines: tuple[str, ...], head: list[int], tail: list[int]) -> tuple[int, int] | None:
    """The longest (first run, last run) lengths that keep ``head`` before ``tail`` in both the snippet
    and the original, each keeping at least one non-trivial line; None when they cannot be in order."""
    p, b, k = head
    q, c, size = tail
    need_head = next((i + 1 for i in range(k) if not is_trivial(lines[b + i])), None)
    need_tail = next((i + 1 for i in range(size) if not is_trivial(lines[c + size - 1 - i])), None)
    if need_head is None or need_tail is None:
        return None
    snippet_room, original_room = c + size - b, q + size - p
    first = min(k, snippet_room - need_tail, original_room - need_tail)
    if first < need_head:
        return None
    last = min(size, snippet_room - first, original_room - first)
    return (first, last) if last >= need_tail else None


def _unchanged_doubts(orig: Original, key, skeys: list[str], heads: list[list[int]], lo: int, hi: int,
                      where: str) -> list[str]:
    """Doubts about a segment that repeats the original unchanged: it may equally be its first lines
    found earlier (its last lines later) with the code between them deleted."""
    if len(heads) > 1:
        return [f"{where}: its lines appear in more than one place"]
    p, n = heads[0][0], len(skeys)
    for i in range(1, n):
        if any(q < p for q in orig.occurrences(key, skeys[:i], lo, hi)) or any(
                q > p + i for q in orig.occurrences(key, skeys[i:], lo, hi)):
            return [f"{where} repeats the original unchanged, and its lines also fit around a deletion"]
    return []


def _runs(orig: Original, key, skeys: list[str], lo: int, hi: int, forward: bool) -> list[list[int]]:
    """Candidate anchors at the segment's start (end): ``[original line, segment line, length]`` for each
    place the opening (closing) lines occur, longest first; places matching fewer than
    ``min(longest, 2)`` lines are not candidates. Empty when the longest run is only trivial lines."""
    okeys = orig.keys(key)
    n = len(skeys)
    runs = []
    edge = skeys[0] if forward else skeys[-1]
    for p in orig.positions(key, edge):
        if not lo <= p < hi:
            continue
        length = 1
        if forward:
            while length < n and p + length < hi and okeys[p + length] == skeys[length]:
                length += 1
            runs.append([p, 0, length])
        else:
            while length < n and p - length >= lo and okeys[p - length] == skeys[n - 1 - length]:
                length += 1
            runs.append([p - length + 1, n - length, length])
    if not runs:
        return []
    longest = max(run[2] for run in runs)
    best = next(run for run in runs if run[2] == longest)
    if all(not skeys[i].strip() or is_trivial(skeys[i]) for i in range(best[1], best[1] + longest)):
        return []
    runs = [run for run in runs if run[2] >= min(longest, 2) or _stopped_by_edge(run, skeys, lo, hi, forward)]
    return sorted(runs, key=lambda run: -run[2])


def _stopped_by_edge(run: list[int], skeys: list[str], lo: int, hi: int, forward: bool) -> bool:
    """Whether an anchor run ends at the range's end (starts at its start, going back) where the segment
    goes on with a blank line: the original has no line left to match it, so the run is as long as it
    can be, not shorter than the others. A segment that ends the snippet after a blank line, anchored
    on the file's last line, is appended there as well as after a copy of that line followed by blank
    lines (hatch's ``test_custom.py``: a new test after ``CustomBuilder(...)``, which ends the file and
    an earlier test). On the 22,504 known answers, kept as a candidate it makes 3 certain and wrong
    merges likely, and as many certain and exact ones.

    >>> keys = ["x", "", "y"]
    >>> _stopped_by_edge([3, 0, 1], keys, 0, 4, True), _stopped_by_edge([2, 0, 1], keys, 0, 4, True)
    (True, False)
    """
    p, b, size = run
    if forward:
        return p + size == hi and b + size < len(skeys) and not skeys[b + size].strip()
    return p == lo and b > 0 and not skeys[b - 1].strip()


def _unique_line(orig: Original, key, lines: tuple[str, ...], run: list[int]) -> bool:
    """Whether an anchor run has a non-trivial line found only once in the whole original."""
    return any(not is_trivial(line) and len(orig.positions(key, key(line))) == 1
               for line in lines[run[1]:run[1] + run[2]])


def _repeats(skeys: list[str], run: list[int]) -> bool:
    """Whether an anchor run's lines occur again elsewhere in the segment (repeated code: then the
    original's copies may be what the segment rewrites)."""
    lines, size = skeys[run[1]:run[1] + run[2]], run[2]
    return any(skeys[i:i + size] == lines for i in range(len(skeys) - size + 1) if i != run[1])


def _solid(lines: tuple[str, ...], run: list[int]) -> int:
    """Non-trivial lines in an anchor run."""
    return sum(1 for line in lines[run[1]:run[1] + run[2]] if not is_trivial(line))
