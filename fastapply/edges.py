"""A placed segment's edges: how the lines between a marker and the segment's first (last) anchor meet the
original. They may be the original's context repeated from beside the anchor, new lines added next to
the code the marker stands for, or lines edited in place (a segment with no marker before or after it,
reaching the file's first or last line, is ``fileedges.py``'s). ``anchor.py`` asks these questions
while it places a segment; each answer that lifts a doubt says, in its docstring, on how many known
answers it was measured.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from fastapply.markers import indent_width
from fastapply.segments import (NEAR, Original, blank_run, exact_key, is_closer, is_trivial, keeps_text, loose_key,
                                lost_lines, opens_block, outdent)

MOST_BLANK = 2  # the longest run of blank lines a style sets between blocks (PEP 8's two around definitions)
_PY_HEADER = re.compile(r"\s*(async\s+def|def|class)\b.*:\s*(#.*)?$")
STRING_START = re.compile(r"[rRbBuU]?(\"|')")  # a line opening a string (a docstring)


def resumes_at_marker(after: list[str], marker_indent: int, new: tuple[str, ...]) -> bool:
    """Whether the original code after a segment's last anchor (``after``) goes on at the indentation
    of the marker that follows the segment, or left of it: the marker stands for that code, so the new
    lines before the marker are added in front of it and replace nothing. The caller asks it only when
    that anchor ends on code: a blank line ending it may be one the new lines brought (packaging
    ``_musllinux.py``, read with that anchor cut to its code: ``cut_to_code``). On the known answers of
    the suite and ``data/train``, 21 merges whose only doubt this lifts are all exact; a marker left of
    the next line may close a block in place of its last lines (poetry's ``legacy_repository.py``: a loop
    replaced by one call), which stays a doubt. Nor
    where the ``new`` lines end by opening a block and the marker sits right of them: it stands for that
    block's body, which the original does not have (a function copied after itself, shown down to its
    ``try:``: found by the property test once the anchor's blank lines were cut, ``cut_to_code``)."""
    last = next((line for line in reversed(new) if line.strip()), "")
    if opens_block(last) and indent_width(last) < marker_indent:
        return False
    line = next((line for line in after if line.strip()), None)
    return line is not None and indent_width(line) <= marker_indent


def beside_anchor(leading: tuple[str, ...], anchor: str) -> bool:
    """Whether the new lines between a marker and a segment's first anchor (``leading``) sit at the
    anchor's indentation or right of it: they open no block around the anchor, so they are added after
    the code the marker stands for. The caller asks it only when that anchor starts on code. On the
    known answers of the suite and ``data/train``, 10 merges whose only doubt this lifts are all exact."""
    return all(indent_width(line) >= indent_width(anchor) for line in leading if line.strip())


class EdgeReading(NamedTuple):
    """How a segment's unanchored edge meets the original beside its anchor (``read_edge``)."""

    reach: tuple[int, int] | None  # (edge lines that are the original's context, original lines the rest
    # replaces), as ``context_reach`` returns it; None: the edge's lines are new, added at the anchor
    unsure: str = ""  # the edge's first line, common and found close by: the original's or new
    in_place: bool = False  # the lines it replaces are edited in place (``edited_in_place``)
    blank: bool = False  # its context is its blank lines (``blank_context_reach``): placed already


def read_edge(edge: tuple[str, ...], beside: list[str], key) -> EdgeReading:
    """A segment's unanchored edge read against the original lines on that side of its anchor, both
    ordered from afar towards the anchor (a segment's closing edge and the lines after it, reversed): as
    the original's context where its first line is a common line found close by (``context_reach``),
    else as blank context before lines edited in place (``blank_context_reach``), else as new lines."""
    if maybe_context(edge[:1], beside[-NEAR:]):
        reach = context_reach(edge, beside, key)
        if reach is None:
            return EdgeReading(None, unsure=edge[0].strip())
        return EdgeReading(reach, in_place=bool(reach[1]) and replaced_in_place(beside[len(beside) - reach[1]:],
                                                                                 edge[reach[0]:]))
    reach = blank_context_reach(edge, beside)
    return EdgeReading(reach, in_place=reach is not None, blank=reach is not None)


def maybe_context(edge: tuple[str, ...], nearby: list[str]) -> bool:
    """Whether a segment's unanchored first (last) line is a common line that the original has close
    by: it may be context replacing what lies between, or a new line inserted."""
    return bool(edge) and bool(edge[0].strip()) and is_trivial(edge[0]) and exact_key(edge[0]) in {
        exact_key(line) for line in nearby}


def context_reach(edge: tuple[str, ...], beside: list[str], key) -> tuple[int, int] | None:
    """A segment's unanchored edge lines read as the original's context: ``edge`` and ``beside`` (the
    original lines on that side of the anchor) both ordered from afar towards the anchor. Returns
    ``(k, r)``: the first ``k`` edge lines are the original's lines ``r`` lines away from the anchor,
    and the other edge lines take the place of those ``r`` (inserted when ``r`` is 0). The most context
    wins, then the fewest lines replaced; None when no reading keeps a non-blank line as context.

    >>> context_reach(("  },", "};", "", "run(list);"), ["a();", "  },", "};", "", "run([1, 2]);"], exact_key)
    (3, 1)
    >>> context_reach(("}", "", "const v = 1;"), ["  x;", "}"], exact_key)
    (1, 0)
    >>> context_reach(("}", "x = 1;"), ["y = 2;", "z = 3;"], exact_key) is None
    True
    """
    n = len(edge)
    ours, theirs = [key(line) for line in edge], [key(line) for line in beside[-n:]]
    for k in range(n, 0, -1):
        if not any(line.strip() for line in edge[:k]):
            continue
        for r in range(min(n - k, len(theirs) - k) + 1):
            first = len(theirs) - r - k
            if theirs[first:first + k] == ours[:k]:
                return k, r
    return None


def blank_context_reach(edge: tuple[str, ...], beside: list[str]) -> tuple[int, int] | None:
    """A segment's unanchored edge that opens with blank lines read as the original's blank lines and, after
    them, the original's lines edited in place: ``edge`` and ``beside`` ordered from afar towards the anchor,
    as ``context_reach``'s. Returns ``(k, r)``: the ``k`` blank edge lines are blank lines of the original
    ``r`` lines away from the anchor, and the edge's ``r`` other lines take the place of those ``r``, each
    keeping its text (``edited_in_place``); None when the edge does not read so. A snippet cut from a diff
    shows the blank line above a changed line as its context, where read as added the changed line would
    stand beside the line it replaces. Where more than one line is replaced, none may open a block: a
    definition added beside a like one reads as that one edited, line for line (quick-lru's ``get
    maxAge()`` added after ``get maxSize()``). On the 22,504 known answers of the suite, ``data/train``
    and ``runs/train-h``, 41 merges it makes certain are exact and one is not (a synthetic snippet of
    hatch's ``auth.py`` that shows an ``if`` block the original has once, with its message edited, where
    the expected file adds the block to another function); 8 more likely ones become exact.

    >>> blank_context_reach(("", "const m = require('./lib/m');"), ["", "const m = require('./m');"])
    (1, 1)
    >>> blank_context_reach(("", "const m = require('./lib/m');"), ["x();", "const m = require('./m');"]) is None
    True
    >>> blank_context_reach(("", "export default function build(options) {"), ["", "const m = require('./m');"]) is None
    True
    """
    k = next((i for i, line in enumerate(edge) if line.strip()), len(edge))
    rest, r = edge[k:], len(edge) - k
    if not k or not r or any(not line.strip() for line in rest) or len(beside) < k + r:
        return None
    blank, replaced = beside[len(beside) - r - k:len(beside) - r], beside[len(beside) - r:]
    if any(line.strip() for line in blank) or not all(line.strip() for line in replaced) \
            or not edited_in_place(replaced, rest):
        return None
    if r > 1 and any(opens_block(line) for line in replaced):
        return None
    return k, r


def cut_to_code(run: list[int], lines: tuple[str, ...], orig: Original, key, last: bool,
                copies: bool = False) -> list[int] | None:
    """A segment's first (``last``: last) anchor run ``[original line, segment line, length]`` that opens
    (ends) with blank lines facing new lines of the segment, cut to its code: the blank lines are then
    the segment's own, around the new lines it adds beside the anchor, and the original's blank lines
    on that side stay whole beside the code the marker stands for. Read as the anchor's, the blank
    lines split the original's run of them around the new lines (packaging's ``_musllinux.py``: an
    ``if TYPE_CHECKING:`` block added after the imports left one blank line before ``class``, where the
    original has two). None where the run has no such edge, or where the cut reading is doubtful:
    a new line there copies a line of the original (the code the marker stands for, shown again:
    cloudpathlib's ``s3path.py``); the new lines are the original's beyond its blank lines edited in
    place (``edits_lines_beside``: an import changed above a blank line); or the original has more
    than ``MOST_BLANK`` blank lines there (a run longer than any style sets between blocks may be one
    the edit splits: an import added in it).

    With ``copies``, new lines that copy lines of the file do not stop the cut: the caller keeps that reading
    only as a draft, not certain (``anchor._place_by_lines``).

    The caller keeps the cut reading where it has fewer doubts. On the 22,504 known answers of the
    suite, ``data/train`` and ``runs/train-h``, 37 merges it makes certain are all exact and 5 likely
    ones become exact. Without the copy check 7 more would be certain and exact, and 2 certain and
    wrong (cloudpathlib's, one of jupyter_client; checking only the original's lines close by keeps
    the second); without the limit on blank lines 2 more certain and wrong (synthetic imports added in
    runs of three); the in-place check keeps 2 exact merges likely (a method added beside a like one
    reads as that one edited; a line of backticks keeps the text of any line with one) and guards a
    shape none of them has (``tests/test_merge.py``).

    >>> lines = ("import sys", "", "if TYPE_CHECKING:", "    import os", "")
    >>> orig = Original(["import re", "import sys", "", "", "class A:"], "python")
    >>> cut_to_code([1, 0, 2], lines, orig, exact_key, last=True)
    [1, 0, 1]
    >>> cut_to_code([0, 0, 2], lines, Original(["import sys", "", "", "", "class A:"], "python"), exact_key,
    ...             last=True) is None   # three blank lines in the original there
    True
    """
    p, b, size = run
    new = lines[b + size:] if last else lines[:b]
    edge = range(size - 1, -1, -1) if last else range(size)
    blank = next((i for i, j in enumerate(edge) if lines[b + j].strip()), size)
    if not blank or blank == size or not any(line.strip() for line in new):
        return None
    cut = [p, b, size - blank] if last else [p + blank, b + blank, size - blank]
    if all(is_trivial(line) for line in lines[cut[1]:cut[1] + cut[2]]) or not copies and any(
            not is_trivial(line) and orig.positions(key, key(line)) for line in new):
        return None
    i, step = (p + size - blank, 1) if last else (p + blank - 1, -1)
    run_length = blank_run(orig.lines, i, step)
    i += step * run_length  # the original's first non-blank line beyond the run
    beyond = orig.lines[i:i + NEAR] if last else orig.lines[max(i - NEAR + 1, 0):i + 1][::-1]
    if run_length > MOST_BLANK or edits_lines_beside(new if last else new[::-1], beyond):
        return None
    return cut


def cut_past_opened(run: list[int], lines: tuple[str, ...]) -> list[int] | None:
    """A segment's first anchor run ``[original line, segment line, length]`` that opens inside a block one
    of the new lines before it opens, cut to start after that block: the run's lines up to the block's
    end (its body and closer) are then the new block's own, which only look like the original's. A new
    ``if (this.opts.ignoreScripts) { return }`` added after an ``if`` ending in the same ``return }``
    anchored on those two lines, so that the new lines split the original block (pacote's ``git.js``);
    a new test anchored on the ``});`` it ends with, like the test before it (zod's ``array.test.ts``).
    None where no line before the run opens a block that ends in it, where such a block does not end
    with a closing line (``}``) under its opener, or where the run keeps no non-trivial line past it.
    A block that ends where the indentation does (a ``case 't':`` label, Python) is left alone: cases
    added after a like one with the same body may as well replace its label (exceljs
    ``worksheet-reader.js``). The caller keeps the cut reading where it has fewer doubts: on the 22,504
    known answers, 14 likely merges so become certain and exact (12 of them wrong before) and one
    certain and wrong (clean-css ``format.js``, whose other segment keeps one of two like ``if`` blocks
    where the expected file drops the other); only the line right before the run, 2 and none.

    >>> lines = ("if (skip) {", "  return", "}", "", "// prepare", "run()")
    >>> cut_past_opened([8, 1, 5], lines)   # "return", "}" are the new block's: anchor from the blank line
    [10, 3, 3]
    >>> cut_past_opened([8, 1, 2], lines) is None   # nothing left past the block
    True
    """
    p, b, size = run
    last = None  # the last line of the run that closes a block opened before it
    for opener in (i for i in range(b) if opens_block(lines[i])):
        end = outdent(lines, opener, b + size)
        if not b <= end < b + size:
            continue  # closed among the new lines, or still open past the run
        if indent_width(lines[end]) != indent_width(lines[opener]) or not is_closer(lines[end]):
            return None
        last = end if last is None else max(last, end)
    if last is None or all(is_trivial(line) for line in lines[last + 1:b + size]):
        return None
    return [p + last + 1 - b, last + 1, size - (last + 1 - b)]


def docstring_above_docstring(anchor: str, new: tuple[str, ...], after: list[str]) -> bool:
    """Whether new lines added after a Python definition's header (``anchor``) open with a string, as the
    original's next line (``after``) does: read as added, they would put a second docstring above the
    definition's own, which an edit of that docstring gives. A doubt that moves none of the 22,504 known
    answers of the suite, ``data/train`` and ``runs/train-h``.

    >>> docstring_above_docstring("def cast(typ, val):", ("    'Cast, unchecked.'",), ["    'Cast.'"])
    True
    >>> docstring_above_docstring("def cast(typ, val):", ("    check(typ)",), ["    'Cast.'"])
    False
    """
    first_new = next((line.strip() for line in new if line.strip()), "")
    first_old = next((line.strip() for line in after if line.strip()), "")
    return bool(_PY_HEADER.match(anchor) and STRING_START.match(first_new) and STRING_START.match(first_old))


def edits_lines_beside(new: tuple[str, ...], beside: list[str]) -> bool:
    """Whether a segment's unanchored edge lines (``new``, ordered from its anchor outwards) look like the
    original's lines on that side of the anchor (``beside``, in the same order) edited in place, with
    more of the original after them: each non-blank one keeps the text of the original's non-blank line
    at its place (``edited_in_place``), and one at least is not that line. Read as lines added next to
    the anchor (the marker's indentation says so) or as the end of the definition around it, such an
    edge may instead replace those lines: a docstring's first line edited, the rest of the body left to
    the marker after it.

    >>> edits_lines_beside(("    'Cast a value to a type, unchecked.'",), ["    'Cast a value to a type.'", "",
    ...                                                                         "    return val"])
    True
    >>> edits_lines_beside(("    log(key)",), ["    return val"])   # a new line, not an edited one
    False
    >>> edits_lines_beside(("    assert a == b, msg",), ["    assert (", "        a == b", "    ), msg"])   # joined
    False
    """
    ours = tuple(line for line in new if line.strip())
    code = [line for line in beside if line.strip()]
    theirs = code[:len(ours)]
    if len(code) <= len(ours) or code[len(ours)].strip() in " ".join(ours):
        return False  # nothing of the original after them, or its next line joined into them
    return edited_in_place(theirs, ours) and any(old.strip() != line.strip() for old, line in zip(theirs, ours))


def edited_in_place(replaced: list[str], new: tuple[str, ...]) -> bool:
    """Whether the new lines between a segment's context and its anchor are the ``replaced`` original
    lines edited in place: as many, each keeping the text of the line it takes the place of
    (``segments.keeps_text``). A segment whose edge replaces original lines this way, and which deletes no
    other original line (``deletes_nothing``), is certain of that edge: on the known answers of the
    suite and ``data/train``, 42 of the 43 merges whose only doubts this lifts are exact (the other is
    wrong where a marker meets a repeated ``)``), against 9 of the 14 it leaves.

    >>> edited_in_place(["static const uint8_t c[16] = k;"], ("static const uint8_t c[] = k;",))
    True
    >>> edited_in_place(["case 'v':"], ("case 'is':", "case 't':"))   # one line became two
    False
    >>> edited_in_place(["// A number is a descriptor."], ("// Descriptors are numbers or objects.",))
    False
    """
    return len(replaced) == len(new) and all(keeps_text(old, line) for old, line in zip(replaced, new))


def replaced_in_place(replaced: list[str], new: tuple[str, ...]) -> bool:
    """Whether the new lines between a segment's context and its anchor (``new``, ordered from the
    context) take the place of the ``replaced`` original lines edited in place: laid out again
    (``reformats``), as many (``edited_in_place``), or more, the first ones each the replaced line at its
    place edited and the others added after them (a value built in a variable first, then set up, then
    returned).
    Where more, each line of the pairing is code (a trivial line keeps the text of any line that holds
    its characters: a ``}`` pairs with any block's line), and no replaced line opens a block: a case, a
    test or an entry of a table added above a like one reads as that one renamed, the rest of the new
    lines its body. On the 22,504 known answers of the suite, ``data/train`` and ``runs/train-h``, the
    pairing of more new lines makes 35 merges certain, all exact; without the block condition 4 more
    are certain and wrong (and 5 exact), without the code condition 7 more exact.

    >>> replaced_in_place(["function parse(_fields, config) {"], ("function parse(fields, config) {", "  check();"))
    False
    >>> replaced_in_place(["return value.replace(A, '');"], ("return value.replace(B, '');", "  .trim();"))
    True
    >>> replaced_in_place(["x = f(a)"], ("}", "x = f(b)"))
    False
    """
    if reformats(replaced, new):
        return True
    if len(new) == len(replaced):
        return edited_in_place(replaced, new)
    first = new[:len(replaced)]
    return len(new) > len(replaced) and not any(opens_block(line) for line in replaced) \
        and not any(is_trivial(line) for line in (*replaced, *first)) and edited_in_place(replaced, first)


def reformats(replaced: list[str], new: tuple[str, ...]) -> bool:
    """Whether the ``new`` lines are the ``replaced`` ones laid out again: the same text but for
    whitespace and line breaks (a long condition split over several lines). The lines may come in either
    order, as those of a segment's closing edge come reversed; blank lines alone are not laid out again.
    On the 22,504 known answers, 3 merges more are certain so, all exact (jsdom
    ``HTMLOptionElement-impl.js`` in the suite).

    >>> reformats(["if (a && (b || c)) {"], ("if (", "  a &&", "  (b || c)", ") {"))
    True
    >>> reformats(["if (a && (b || c)) {"], ("if (", "  a ||", "  (b || c)", ") {"))
    False
    >>> reformats(["", ""], ())
    False
    """
    old, ours, old_reversed, ours_reversed = ("".join(map(loose_key, lines))
                                              for lines in (replaced, new, replaced[::-1], new[::-1]))
    return bool(old) and (old == ours or old_reversed == ours_reversed)


def deletes_nothing(original: list[str], lines: tuple[str, ...], key) -> bool:
    """Whether a segment put in the place of ``original`` keeps each of its non-blank lines, as it is
    or edited in place (a line changed into one other line).

    >>> deletes_nothing(["a = 1", "b = 2", "c = 3"], ("a = 1", "b = 20", "x = 0", "c = 3"), exact_key)
    True
    >>> deletes_nothing(["a = 1", "b = 2", "c = 3"], ("a = 1", "c = 3"), exact_key)
    False
    """
    lost = lost_lines([key(line) for line in original], [key(line) for line in lines])
    return not any(original[i].strip() for i in lost)
