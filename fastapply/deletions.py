"""Deletions an edit did not ask for, in a rewritten file (``validate.py`` names them as problems).

``unrelated_deletions`` finds original lines the output deletes far from every line the update repeats
and outside every definition it touches; ``marker_deletions`` finds original lines a lazy marker of the
update keeps (``kept_by_markers``: where the snippet pins the marker's reach down) and the output
deletes. A definition the update or the instruction asks to delete by name ("Remove the function
`save`.") is left out of both. ``part_taken_whole`` finds the lines an output deletes by being the
update alone where the update is a part of the file. This module judges lines; it does not name
problems or write anything.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

from fastapply.blockend import last_closers
from fastapply.defs import definitions
from fastapply.fileedges import inside_file
from fastapply.markers import count_markers, marker_lines
from fastapply.segments import is_trivial, keeps_text, lost_lines, starts_inside_block

_NEAR = 3  # deleted lines this close to a line the update repeats count as part of the edit
# Words that ask for a deletion, read over the update's code as well as the instruction: not ``asks.py``'s
# words for an instruction alone, whose ``strip``, ``clean`` and ``trim`` are words of code too.
_DELETE_WORDS = re.compile(r"\b(delete|deleted|remove|removed|drop|dropped|get rid of)\b", re.IGNORECASE)


def unrelated_deletions(original: str, output: str, update: str, language: str | None,
                        instruction: str = "") -> list[int]:
    """Original lines (0-based) the output deletes that are far from every line the update repeats and
    outside every definition it touches; empty when the update repeats no original line (then it does
    not say where the edit is). A definition the update or the instruction asks to delete by name counts
    as touched."""
    old, new = original.split("\n"), output.split("\n")
    update_lines = {line.strip() for line in update.split("\n") if len(line.strip()) > 2}
    anchors = [i for i, line in enumerate(old) if line.strip() in update_lines]
    if not anchors:
        return []
    touched = set()
    for i in anchors:
        touched.update(range(i - _NEAR, i + _NEAR + 1))
    defs = definitions(original, language) if language is not None else []
    touched.update(_asked_deletions(defs, update, instruction))
    for d in defs:
        inside = any(d.start <= i < d.end for i in anchors)
        if inside and d.end - d.start <= 200 and not _contains_other_defs(d, defs, anchors):
            touched.update(range(d.start, d.end))
    shown = [line.strip() for line in update.split("\n") if line.strip()]
    neighbours = set(zip(shown, shown[1:]))
    far = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and _shown_in_place(new[j1:j2], i2 - i1, update_lines):
            continue  # lines replaced, one for one, by lines the update shows: the edit itself
        if tag in ("delete", "replace") and not _left_out(old, i1, i2, neighbours):
            far.extend(i for i in range(i1, i2) if old[i].strip() and i not in touched)
    return far


def part_taken_whole(original: str, output: str, update: str, language: str | None, instruction: str = "") -> list[int]:
    """Original lines (0-based) that the output, being the update alone, deletes (the update does not
    show them), where the update may not be the whole new file: it has no lazy marker and starts inside a
    block (``segments.starts_inside_block``: ``  db:`` of a YAML service) or leaves out lines of the file
    before or after it (``fileedges.inside_file`` with no allowance: a README's section, a class without its
    imports), as the merge takes it; fastapply-small, given such a part, wrote it alone as the file. A
    definition the update or the instruction asks to delete by name is left out.

    >>> part_taken_whole("a:\\n  x: 1\\nb:\\n  y: 2\\n", "b:\\n  y: 3\\n", "b:\\n  y: 3\\n", "yaml")
    []
    >>> part_taken_whole("a:\\n  x: 1\\nb:\\n  y: 2\\n", "b:\\n  y: 3\\n", "  b:\\n    y: 3\\n", "yaml")
    [0, 1, 3]
    >>> readme = "# demo\\n## Install\\npip install demo\\n## Usage\\ndemo run\\n## License\\nMIT\\n"
    >>> section = "## Install\\npip install demo[all]\\n"
    >>> part_taken_whole(readme, section, section, "markdown")
    [0, 2, 3, 4, 5, 6]
    """
    old, shown = original.split("\n"), update.split("\n")
    if count_markers(update, language) or not (starts_inside_block(old, shown) or inside_file(old, shown, allowance=0)):
        return []
    from_update = {line.strip() for line in shown}
    written = [line.strip() for line in output.split("\n") if line.strip()]
    if not written or any(line not in from_update for line in written):
        return []
    kept = Counter(written)
    asked = _asked_deletions(definitions(original, language) if language is not None else [], update, instruction)
    deleted = []
    for i, line in enumerate(old):
        if line.strip() and kept[line.strip()] > 0:
            kept[line.strip()] -= 1
        elif line.strip() and i not in asked:
            deleted.append(i)
    return deleted


def _asked_deletions(defs: list, update: str, instruction: str) -> set[int]:
    """Lines of the definitions the update or the instruction asks to delete by name ("Remove the function
    `save`."), with the comments and attributes just above each."""
    request = f"{update}\n{instruction}"
    if not _DELETE_WORDS.search(request):
        return set()
    return {i for d in defs if re.search(rf"\b{re.escape(d.name)}\b", request) for i in range(d.start - _NEAR, d.end)}


def marker_deletions(original: str, output: str, update: str, language: str | None, instruction: str = "") -> list[int]:
    """Original lines (0-based) that a lazy marker of the update keeps and the output deletes (a net loss of
    lines there, not a line changed in place), leaving out definitions the edit asks to delete by name.

    >>> marker_deletions("a\\nb\\nc\\nd\\n", "a\\nd\\n", "a\\n# ...\\nd\\n", "python")   # the marker keeps b, c
    [1, 2]
    """
    kept = kept_by_markers(original, update, language)
    if not kept:
        return []
    lost = lost_lines(original.split("\n"), output.split("\n"))
    if not kept & lost:  # the common case: no parse needed
        return []
    asked = _asked_deletions(definitions(original, language) if language is not None else [], update, instruction)
    return sorted((kept & lost) - asked)


def kept_by_markers(original: str, update: str, language: str | None) -> set[int]:
    """The non-blank original lines (0-based) that the update's lazy markers stand for, where the snippet
    pins them down: between the lines around a marker when each occurs once in the original (in order)
    or one of them once and the other's nearest copy on its side (``_inner_marker_reach``), and before
    (after) a marker that opens (closes) the snippet, up to the segment's first (last) line that occurs
    once in the original, when the segment's lines shown before (after) it are the original's own lines
    there as they stand; failing that, such a marker keeps at least the file's first (last) non-blank
    line, unless the snippet shows it. A marker that opens a snippet whose one segment opens with closing
    lines and goes on with new code keeps what comes before the file's last copy of those closing lines
    (the merge engine's reading, ``blockend.last_closers``). Elsewhere a marker's reach is left open.

    >>> sorted(kept_by_markers("import os\\n\\ndef f():\\n    return 1\\n", "# ...\\ndef f():\\n    return 2\\n", "python"))
    [0]
    """
    old = [line.strip() for line in original.split("\n")]
    counts, index = Counter(old), {line: i for i, line in enumerate(old)}
    lines = update.split("\n")
    marks = marker_lines(lines, language)
    code = [None if marker or not line.strip() else line.strip() for line, marker in zip(lines, marks)]
    kept: set[int] = set()
    for m in (m for m, marker in enumerate(marks) if marker):
        before = next((k for k in range(m - 1, -1, -1) if code[k]), None)
        after = next((k for k in range(m + 1, len(lines)) if code[k]), None)
        if before is not None and after is not None:
            if marks[before + 1:after].count(True) == 1:
                kept.update(_inner_marker_reach(old, counts, index, code[before], code[after]))
        elif before is None and after is not None and (
                own := _last_closers_kept(original, lines, marks, m)) is not None:
            kept.update(range(own))
        elif before is not None or after is not None:
            kept.update(_edge_marker_reach(old, counts, index, code, marks, m, 1 if before is None else -1))
    return {i for i in kept if old[i]}


def _last_closers_kept(original: str, lines: list[str], marks: list[bool], m: int) -> int | None:
    """How many original lines the marker ``m`` that opens the snippet keeps when the snippet's only
    segment, after it, opens with closing lines and goes on with new code: those before the file's last
    copy of the closing lines (``blockend.last_closers``, the merge engine's reading); else None."""
    if any(marks[m + 1:]):
        return None
    old = original.split("\n")
    return last_closers(old, [line for line in lines[m + 1:] if line.strip()], 0, len(old))


def _inner_marker_reach(old: list[str], counts: Counter, index: dict[str, int], before: str, after: str) -> range:
    """The original lines a marker between the snippet lines ``before`` and ``after`` keeps for certain:
    those between the two when each occurs once, in order. When one of them occurs more than once and
    the other, not trivial, once, every reading of the marker keeps at least the lines between the
    unique one and the nearest copy of the other on its side (cramjam ``test_rust_io.py``: a marker after
    a decorator the file has twice, and an answer that drops the lines between the two copies).

    >>> old = ["@dec", "def f():", "@dec", "def g():", "end()"]
    >>> _inner_marker_reach(old, Counter(old), {line: i for i, line in enumerate(old)}, "@dec", "end()")
    range(3, 4)
    """
    if counts[before] == counts[after] == 1:
        return range(index[before] + 1, index[after]) if index[before] < index[after] else range(0)
    if counts[after] == 1 and counts[before] > 1 and not is_trivial(before):
        start = next((i for i in range(index[after] - 1, -1, -1) if old[i] == before), None)
        return range(0) if start is None else range(start + 1, index[after])
    if counts[before] == 1 and counts[after] > 1 and not is_trivial(after):
        end = next((i for i in range(index[before] + 1, len(old)) if old[i] == after), None)
        return range(0) if end is None else range(index[before] + 1, end)
    return range(0)


def _edge_marker_reach(old: list[str], counts: Counter, index: dict[str, int], code: list[str | None],
                       marks: list[bool], m: int, step: int) -> range:
    """The original lines a marker opening (``step`` 1) or closing (-1) the snippet keeps: up to the
    segment's first (last) line found once in the original, when the segment's lines between are the
    original's own lines there, new lines among them or not (``_shown_edge``). Failing that, at least
    the file's first (last) non-blank line, which the marker stands for unless the snippet shows it (as
    it is or edited in place): on the known answers of the suite and ``data/train`` no expected answer
    loses that line."""
    shown = []  # the segment's lines from the marker to that line
    k = m + step
    while 0 <= k < len(code) and not marks[k]:
        if code[k] and counts[code[k]] == 1:
            edge = _shown_edge(old, shown, index[code[k]], step)
            if edge is not None:
                return range(edge) if step == 1 else range(edge + 1, len(old))
            break
        shown.append(code[k] or "")
        k += step
    outer = next((i for i in (range(len(old)) if step == 1 else range(len(old) - 1, -1, -1)) if old[i]), None)
    if outer is None or any(keeps_text(old[outer], line) for line in code if line):
        return range(0)
    return range(outer, outer + 1)


def _shown_edge(old: list[str], shown: list[str], u: int, step: int) -> int | None:
    """Where the segment's first (``step`` 1; last: -1) shown line stands in the original when the lines
    it shows between the marker and the unique line ``u`` are the original's lines next to ``u``, in
    order, new lines among them or not (``u`` itself when it shows none); None when they are not, or
    when that first line is itself new.

    >>> _shown_edge(["def get(k):", "k = str(k)", "def delete(k):", "k = str(k)", "drop(k)"],
    ...             ["k = str(k)", "try:"], 4, 1)   # `try:` is new: the marker keeps lines 0-2
    3
    """
    if not shown:
        return u
    p = u - step
    for line in reversed(shown):
        if 0 <= p < len(old) and old[p] == line:
            p -= step
    first = p + step
    if first == u or old[first] != shown[0]:
        return None
    return first


def _shown_in_place(replacement: list[str], replaced: int, update_lines: set[str]) -> bool:
    """Whether ``replaced`` original lines gave way to as many lines, each shown by the update.

    >>> _shown_in_place(["class A(Node):"], 1, {"class A(Node):"})
    True
    >>> _shown_in_place(["class A(Node):"], 5, {"class A(Node):"})   # four more lines gone
    False
    """
    return len(replacement) == replaced and all(line.strip() in update_lines for line in replacement
                                                if line.strip())


def _left_out(old: list[str], i1: int, i2: int, neighbours: set[tuple[str, str]]) -> bool:
    """Whether the update shows the lines around original[i1:i2] next to each other: it deletes them by
    leaving them out (``a`` / ``c`` in the update, ``a`` / ``b`` / ``c`` in the original). Not when the
    lines themselves end with ``a`` or start with ``c``: then the original already has ``a`` next to ``c``
    and the update shows those, deleting nothing.

    >>> _left_out(["a", "b", "c"], 1, 2, {("a", "c")})
    True
    >>> _left_out(["#[cfg]", "mod x;", "#[cfg]", "use x;"], 1, 3, {("#[cfg]", "use x;")})
    False
    """
    before = next((line.strip() for line in reversed(old[:i1]) if line.strip()), None)
    after = next((line.strip() for line in old[i2:] if line.strip()), None)
    if (before, after) not in neighbours:
        return False
    block = [line.strip() for line in old[i1:i2] if line.strip()]
    return not (block and (block[-1] == before or block[0] == after))


def _contains_other_defs(d, defs, anchors) -> bool:
    """A definition holding others (a class) counts as touched only through its own lines, not whole."""
    children = [c for c in defs if d.start <= c.start and c.end <= d.end and c is not d]
    return bool(children) and not any(d.start <= i < d.end and not any(c.start <= i < c.end for c in children)
                                      for i in anchors)

