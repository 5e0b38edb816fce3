"""Which of several readings of a segment's anchors is meant.

A segment whose first or last anchor line occurs in several places of the original has several
readings, each a (first, last) pair of anchor runs in order (``anchorruns.find_anchors`` finds them). Most
would silently delete what lies between the anchors; the one that only adds or edits code is meant
when it is the only such one (``only_clean_reading``), and a reading that rewrites a definition the
file names twice is not settled so (``covers_repeated_name``). ``anchor.py`` asks; this module reads.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

from fastapply.markers import indent_width
from fastapply.segments import Original, is_trivial, keeps_text, lost_lines

# Another reading that covers a few more original lines than the clean one (a repeated pattern of
# lines, such as a diff in a docstring, cut short) is as likely meant: the clean one is not settled.
# Found by the property test on difflib's `- abcDefghiJkl / ? ^ ^ ^ / + ...` docstring; on the 22,504
# known answers (`merge_bench.py --known ... --against`) it demotes 3 wrong certain merges and 26
# exact ones, none in the suite.
NEAR_READING = 3


def only_clean_reading(orig: Original, key, skeys: list[str], pairs, taken) -> bool:
    """Whether the reading ``taken`` (a first and a last anchor run) is the only one of the candidate
    ``pairs`` that deletes nothing (``_clean``), or,
    when none is clean, the only one that inserts the segment's new lines between its runs where they
    meet in the original (lines of new code among them: lines that are all the original's own, between
    runs that meet, show a deletion elsewhere).

    A segment anchored on a line found in several places (a docstring's closing quotes, a ``/**``)
    then has one reading that only adds or edits code, against others that would silently delete
    what lies between anchors. On the known answers of the suite and ``data/train``, 51 merges whose
    only doubts this lifts are all exact. The caller's checks: a run of blank lines alone is never the
    anchor it settles, and a run that opens with a blank line settles only when its reading rewrites no
    definition the file names twice (``covers_repeated_name``): one reading of an added method that
    rewrote a same-named one in another class came out clean (wtforms ``numeric.py``). With those, 13
    more merges are settled, all exact (4 in the suite). A reading that inserts is not clean when the
    new lines copy a line the file has elsewhere (an ``#if`` repeated, a test written like its
    neighbours); when it is the only one that deletes nothing, brings new code and repeats no
    definition's header (``_redefines``), 22 more merges are settled, all exact (2 in the suite), and
    none of 3,600 random edits of standard library files (``tests/test_merge_properties.py``'s kind)
    merges wrong where it did not before. Not where another reading puts one new line in place of one
    original line between its runs (``_swaps``): a line shown between two that meet in one place and
    stand around another line elsewhere may be inserted there or change that line (``merge_bench.py
    --functions``: 3 of 11 certain and wrong merges of 1,000 so; ``--imports``: 10 of 24 of 3,000; the
    known answers, ``--definitions``, ``--methods`` and ``--beside`` did not move).
    """
    clean, inserts = set(), set()
    for head, tail in pairs:
        if _clean(orig, key, skeys, head, tail):
            clean.add((head[0], tail[0] + tail[2]))
        between = skeys[head[1] + head[2]:tail[1]]
        if tail[0] == head[0] + head[2] and any(not is_trivial(k) and not orig.positions(key, k)
                                                 for k in between) and not _redefines(orig, between):
            inserts.add((head[0], tail[0] + tail[2]))  # new code between runs that meet in the original
    span = (taken[0][0], taken[1][0] + taken[1][2])
    if any(_swaps(orig, key, skeys, h, t) for h, t in pairs if (h[0], t[0] + t[2]) != span):
        return False
    return (clean or inserts) == {span}


def _swaps(orig: Original, key, skeys: list[str], head: list[int], tail: list[int]) -> bool:
    """Whether the reading with these anchors puts one new line between its runs in place of one original
    line there (a line changed for another)."""
    old = [k for k in orig.keys(key)[head[0] + head[2]:tail[0]] if k.strip()]
    new = [k for k in skeys[head[1] + head[2]:tail[1]] if k.strip()]
    return len(old) == len(new) == 1


def _redefines(orig: Original, new: list[str]) -> bool:
    """Whether the ``new`` lines hold the header of a definition the file already has, at its
    indentation: a second ``def previous(self):`` beside the first is an edit of it read as an
    insertion."""
    for d in orig.defs():
        width, name = indent_width(orig.lines[d.header]), re.compile(rf"\b{re.escape(d.name)}\b")
        if any(k.strip() and indent_width(k) == width and name.search(k) for k in new):
            return True
    return False


def covers_repeated_name(orig: Original, start: int, end: int) -> bool:
    """Whether original[start:end] holds the header of a definition whose name the file defines more
    than once (``_value`` in several classes): a snippet showing it may mean any of them."""
    names = Counter(d.name for d in orig.defs())
    return any(names[d.name] > 1 for d in orig.defs() if start <= d.header < end)


def cut_definition(orig: Original, key, skeys: list[str], last: str, head: list[int], tail: list[int]) -> str | None:
    """The name of a definition the reading with these anchors cuts, where the segment's last line
    (``last``) also occurs nearer, so that a shorter match of it would replace fewer lines; else None.

    A definition is cut when its header is among the original lines the reading loses (``lost_lines``)
    and its body goes on after the last anchor, under the definition above it, with its name nowhere
    in the segment. A segment that edits a line in place and ends on two lines that a later function
    also has (``kernels = self.ksm.find_kernel_specs()`` and the assertion after it) is otherwise
    anchored on that function, deleting every test between. On the 22,504 known answers it demotes
    4 wrong certain merges to likely and no exact one; without the nearer match, 7 exact ones too
    (functions merged into one, ``setup`` and ``teardown`` into a fixture). Its mirror (a definition
    losing its end to a segment whose first line also occurs nearer) demotes 3 exact merges and no
    wrong one: not asked.
    """
    start, end = head[0], tail[0] + tail[2]
    if is_trivial(last) or tail[1] + tail[2] < len(skeys) or not any(
            start + head[2] <= p < end - 1 for p in orig.positions(key, skeys[-1])):
        return None
    new = skeys[head[1]:tail[1] + tail[2]]
    lost, text = lost_lines(orig.keys(key)[start:end], new), "\n".join(new)
    return next((d.name for d in orig.defs() if start <= d.header < end < d.end and d.header - start in lost
                 and d.name not in text), None)


def _clean(orig: Original, key, skeys: list[str], head: list[int], tail: list[int]) -> bool:
    """Whether the reading with these anchors deletes nothing: it changes something, keeps every
    non-blank original line it replaces (as it is, or edited into a new line: ``keeps_text``), writes
    no line that the file has more often than the lines it replaces hold it (a copy of an original
    line), and keeps the name of every definition it starts in. A reading that turns ``def code``
    into ``def status`` may be an insertion of ``status`` next to ``code`` anchored in the wrong place;
    one that edits an assertion in place and adds a second ``self.assertEqual(`` after it may be two
    assertions added after the next one (wtforms ``tests/widgets.py``). Counting the copies, not only
    lines the replaced ones lack, moves 5 of the 22,504 known answers: 3 wrong certain merges to
    likely, 2 exact likely ones to certain.
    """
    start, end = head[0], tail[0] + tail[2]
    old, new = orig.keys(key)[start:end], skeys[head[1]:tail[1] + tail[2]]
    if [k for k in old if k.strip()] == [k for k in new if k.strip()]:
        return False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("delete", "replace") and not _each_kept(old[i1:i2], new[j1:j2]):
            return False
    kept, added = Counter(old), Counter(new)
    if any(added[k] > kept[k] and not is_trivial(k) and orig.positions(key, k) for k in added):
        return False
    return keeps_names(orig, start, end, new)


def keeps_names(orig: Original, start: int, end: int, new: list[str]) -> bool:
    """Whether ``new`` lines in place of original[start:end] keep the name of every definition that
    starts there (a ``def code`` turned into ``def status`` may be ``status`` added beside it)."""
    text = "\n".join(new)
    return all(d.name in text for d in orig.defs() if start <= d.header < end)


def _each_kept(old: list[str], new: list[str]) -> bool:
    """Whether each non-blank ``old`` line is edited into one of the ``new`` lines, in order.

    >>> _each_kept(["x = 1", "", "y = 2"], ["x = 10", "z = 0", "y = 2  # two"])
    True
    >>> _each_kept(["x = 1", "y = 2"], ["print(x)"])
    False
    """
    j = 0
    for line in old:
        if not line.strip():
            continue
        while j < len(new) and not (new[j].strip() and keeps_text(line, new[j])):
            j += 1
        if j == len(new):
            return False
        j += 1
    return True
