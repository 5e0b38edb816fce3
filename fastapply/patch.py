"""An edit written as a diff (read by ``diffs.py``) applied to the file line for line.

A hunk's old lines (its context and the lines it deletes) are looked for in the file, exactly or but
for trailing whitespace, or in one place but for the spacing within lines (``_spacing_aside``), or,
found nowhere so, in one place but for one indentation every line of them
lacks or has beyond the file's (``_reindented``: a chat model quoting a method without its class's
indentation; its new lines are then indented as the file's). Found once, or, where found more than
once, within the scope its bare headers name (``@@ class B:``, ``_in_scope``), at the file's end
(``*** End of File``) or at the line its header names (where the headers' numbers add up as a tool
writes them, ``Patch.numbers_add_up``), they give way to its new lines, the file's own text kept for its
context lines. A diff whose every hunk is placed so, none overlapping, is ``certain``: it says exactly
what to change and where, unless a hunk found once is not at the line its header names while another
was placed by its number. A hunk of new lines alone (``diff -U0``) is placed by its header's number,
certain only where the hunks found once in the file are each at the line their headers name (a chat
model's numbers may add up and still be wrong). Whatever its doubts, the file is certain where git's
``index OLD..NEW`` line names the original and the patched file both (``made_by_git``): the diff was
made of this very file, and gives what it was made to. A hunk found nowhere whose context is stale
(``_stale``: its deleted lines and most of its context in one place) is placed there, as if by its
number where that is the line its header names (numbers that add up), else ``likely``. A
diff with a hunk not placed at all is read as the update snippet it amounts to (``as_snippet``: each
hunk's context and new lines between lazy markers), which the merge engine places, ``likely`` at best.
A model reads a diff as that snippet, of its hunks as placed where they are (``as_update``).

>>> from fastapply.diffs import read_patch
>>> patch = read_patch("@@ -1,2 +1,2 @@\\n a = 1\\n-b = 2\\n+b = 3\\n")
>>> result = apply_patch("a = 1\\nb = 2\\nc = 4\\n", patch, "python")
>>> result.confidence, result.text
('certain', 'a = 1\\nb = 3\\nc = 4\\n')
"""

from __future__ import annotations

from functools import lru_cache

from fastapply.diffs import Hunk, Patch, named_ends, names_blob
from fastapply.merge import CERTAIN, LIKELY, NONE, MergeResult, merge
from fastapply.snippet import marker_like
from fastapply.syntax import count_errors


def apply_patch(original: str, patch: Patch, language: str | None) -> MergeResult:
    """``patch`` applied to ``original`` (LF text): certain where every hunk is placed, as above."""
    if patch.creates and original.strip():
        return MergeResult(None, NONE, ("the diff creates the file, which is not empty",))
    placed = _place(original, patch)
    if isinstance(placed, str):
        return _as_snippet_merge(original, patch, language, placed)
    text, span, doubts, _ = placed
    if patch.blobs is not None and made_by_git(original, text, patch.blobs):
        return MergeResult(text, CERTAIN, (), span)  # the very file the diff was made to, whatever doubts it raised
    if language is not None and count_errors(text, language) > count_errors(original, language):
        doubts += ("the patched file has more syntax errors than the original",)
    return MergeResult(text, LIKELY if doubts else CERTAIN, doubts, span)


def made_by_git(original: str, text: str, blobs: tuple[str, str]) -> bool:
    """Whether git's ``index OLD..NEW`` line names ``original`` and ``text`` (LF text, or both stored with
    CRLF line ends): the diff was made of this very file, and ``text`` is the file it was made to. An id
    is git's object id (SHA-1, or SHA-256 in a repository of that format) of the file's bytes, shortened
    to at least 7 hex digits.

    >>> made_by_git("a\\n", "b\\n", ("78981922", "61780798"))
    True
    """
    crlf = named_ends(blobs[0], original)
    return crlf is not None and names_blob(blobs[1], text, crlf)


@lru_cache(maxsize=8)
def _place(original: str, patch: Patch) -> tuple[str, tuple[int, int], tuple[str, ...], Patch] | str:
    """The file with every hunk placed (its text, the span of original lines the hunks cover, the doubts
    of their placing, and the hunks as placed: numbered where they stand, their context lines the file's
    own), or why a hunk cannot be placed. Kept for the last few: one edit places its diff for the
    model's snippet, the merge and an instruction's check."""
    lines = _lines(original)
    stripped = [line.rstrip() for line in lines]
    placed: list[tuple[int, int, Hunk]] = []
    doubts: list[str] = []
    borne_out = None  # whether the hunks found once are each at the line their headers name (None: no such hunk)
    by_number: list[Hunk] = []  # hunks placed by their headers' numbers
    for n, hunk in enumerate(patch.hunks, 1):
        old = hunk.old
        found = _occurrences(lines, stripped, old) if old else []
        if old and not found and (moved := _reindented(stripped, hunk)) is not None:
            found, hunk = moved  # its lines, indented as a whole more or less than the file's, found once
        if hunk.scope and len(found) > 1:  # of several places, the one within the scope its headers name
            found = [at for at in found if _in_scope(stripped, at, hunk)] or found
        if hunk.at_end and len(found) > 1:  # or the one that ends the file
            found = [at for at in found if at + len(old) == len(lines)] or found
        if len(found) == 1:
            if hunk.start is not None:
                borne_out = borne_out is not False and found[0] == hunk.start - 1
            placed.append((found[0], found[0] + len(old), hunk))
        elif not old and not original.strip():  # new lines into an empty file
            placed.append((0, 0, hunk))
        elif hunk.start is not None and patch.numbers_add_up and (not old or hunk.start - 1 in found):
            at = hunk.start - 1 if old else hunk.start
            placed.append((at, at + len(old), hunk))
            by_number.append(hunk)
        elif old and not found and (fuzzy := _stale(stripped, hunk)) is not None:
            at, missed = fuzzy
            placed.append((at, at + len(old), hunk))
            if patch.numbers_add_up and hunk.start == at + 1:  # where its header says, too: placed by its number
                by_number.append(hunk)
            else:
                doubts.append(f"hunk {n}'s context differs from the file in {missed} line(s), which are kept as the "
                              f"file has them")
        elif not old:
            return f"hunk {n} shows no line of the file; the diff's line numbers do not place it"
        elif not found:
            return f"hunk {n}'s old lines are not in the file"
        elif patch.numbers_add_up and hunk.start is not None:
            return f"hunk {n}'s old lines are in the file {len(found)} times, none at the line its header names"
        else:
            return f"hunk {n}'s old lines are in the file {len(found)} times; the diff's line numbers do not place it"
    if any(not hunk.old for hunk in by_number) and borne_out is not True:
        doubts.append("a hunk of new lines alone is placed by its header's line number, which no hunk found once "
                      "in the file bears out")
    if any(hunk.old for hunk in by_number) and borne_out is False:
        doubts.append("a hunk found more than once is placed by its header's line number, which a hunk found once "
                      "in the file does not bear out")
    placed.sort(key=lambda p: (p[0], p[1]))
    out: list[str] = []
    as_placed: list[Hunk] = []
    done = 0
    for start, end, hunk in placed:
        if start < done:
            return "two hunks of the diff overlap in the file"
        out += lines[done:start]
        ops = [(kind, lines[start + i] if kind == " " else line)  # the file's own text of a context line
               for i, (kind, line) in zip(_old_index(hunk.ops), hunk.ops)]
        out += [line for kind, line in ops if kind != "-"]
        as_placed.append(Hunk(tuple(ops), start + 1))
        done = end
    out += lines[done:]
    newline = original.endswith("\n") or not original if patch.final_newline is None else patch.final_newline
    text = "\n".join(out) + ("\n" if newline and out else "")
    return text, (placed[0][0], placed[-1][1]), tuple(doubts), Patch(tuple(as_placed), patch.final_newline)


def _old_index(ops: tuple[tuple[str, str], ...]) -> list[int]:
    """For each op, how many old lines come before it in its hunk."""
    index, seen = [], 0
    for kind, _ in ops:
        index.append(seen)
        seen += kind != "+"
    return index


def _stale(have: list[str], hunk: Hunk) -> tuple[int, int] | None:
    """Where a hunk whose old lines are nowhere in the file stands but for some of its context lines
    (a diff written against an older file, or a chat model misremembering a line), and how many differ:
    the one place where every line it deletes is the file's (but for trailing whitespace), and all its
    context lines but at most a third of them (at least one), with two non-blank lines the same."""
    old = [(kind, line.rstrip()) for kind, line in hunk.ops if kind != "+"]
    allowed = max(1, sum(kind == " " for kind, _ in old) // 3)
    spots = []
    for i in range(len(have) - len(old) + 1):
        missed, same = 0, 0
        for j, (kind, line) in enumerate(old):
            if have[i + j] == line:
                same += bool(line.strip())
            elif kind == "-" or missed == allowed:
                break
            else:
                missed += 1
        else:
            if same >= 2:
                spots.append((i, missed))
    return spots[0] if len(spots) == 1 else None


def _reindented(stripped: list[str], hunk: Hunk) -> tuple[list[int], Hunk] | None:
    """Where a hunk found nowhere as written stands with every line of it indented by the same whitespace
    more or less than the file's (a chat model quoting a method without its class's indentation), if
    that is one place: there, and the hunk with its new lines indented as the file's lines are."""
    old = [line.rstrip() for line in hunk.old]
    spots = []
    for i in range(len(stripped) - len(old) + 1):
        if stripped[i].strip() != old[0].strip():
            continue
        shifts = {_shift(have, want) for have, want in zip(stripped[i:i + len(old)], old) if want or have}
        if len(shifts) == 1 and (shift := shifts.pop()) is not None and shift != ("", ""):
            spots.append((i, shift))
    if len(spots) != 1:
        return None
    at, (more, less) = spots[0]
    ops = []
    for kind, line in hunk.ops:
        if kind == "+" and line.strip():
            if not line.startswith(less):
                return None
            line = more + line.removeprefix(less)
        ops.append((kind, line))
    return [at], Hunk(tuple(ops), hunk.start, hunk.new_start, hunk.scope, hunk.at_end)


def _shift(have: str, want: str) -> tuple[str, str] | None:
    """(the indentation ``have`` has beyond ``want``, or ``want`` beyond ``have``) where the two lines are
    one but for that; None where they differ otherwise (a blank line against a line of text)."""
    if not (have and want) or have.strip() != want.strip():
        return None
    if have.endswith(want) and not have[:len(have) - len(want)].strip():
        return have[:len(have) - len(want)], ""
    if want.endswith(have) and not want[:len(want) - len(have)].strip():
        return "", want[:len(want) - len(have)]
    return None


def _in_scope(stripped: list[str], at: int, hunk: Hunk) -> bool:
    """Whether the hunk placed at line ``at`` is within the scope its bare headers name: from its first
    changed line up, the nearest line that is the innermost name, with no line between them indented as
    little as that line (its block not ended), and so on outwards from each name's line."""
    ops = [kind for kind, _ in hunk.ops]
    first = ops.index("-") if "-" in ops else ops.index("+") if "+" in ops else 0
    point = at + max(0, sum(kind != "+" for kind in ops[:first]) - (ops[first:first + 1] == ["+"]))
    below = point + 1  # the names are looked for above this line
    for name in reversed(hunk.scope):
        line = next((k for k in range(below - 1, -1, -1) if stripped[k].strip() == name), None)
        if line is None:
            return False
        indent = len(stripped[line]) - len(stripped[line].lstrip())
        if any(text.strip() and len(text) - len(text.lstrip()) <= indent for text in stripped[line + 1:point + 1]):
            return False
        below = point = line
    return True


def _lines(text: str) -> list[str]:
    """The lines of LF text, without their newlines (none for an empty text)."""
    return text.removesuffix("\n").split("\n") if text else []


def _occurrences(lines: list[str], stripped: list[str], old: list[str]) -> list[int]:
    """Where ``old`` runs in ``lines``: exactly, or where it is nowhere so, but for trailing whitespace
    (``stripped``: the lines without it), or but for the spacing within its lines (an agent quoting
    ``f(a,b)`` for ``f(a, b)``; each line's indentation the file's), there only where that is one place."""
    for have, want in ((lines, old), (stripped, [line.rstrip() for line in old])):
        found = [i for i in range(len(have) - len(want) + 1) if have[i] == want[0] and have[i:i + len(want)] == want]
        if found:
            return found
    have, want = [_spacing_aside(line) for line in stripped], [_spacing_aside(line) for line in old]
    found = [i for i in range(len(have) - len(want) + 1) if have[i] == want[0] and have[i:i + len(want)] == want]
    return found if len(found) == 1 else []


def _spacing_aside(line: str) -> str:
    """``line``'s indentation and its other characters but whitespace.

    >>> _spacing_aside("    f(a,  b) ")
    '    f(a,b)'
    """
    body = line.lstrip()
    return line[:len(line) - len(body)] + "".join(body.split())


def _as_snippet_merge(original: str, patch: Patch, language: str | None, why: str) -> MergeResult:
    """The merge of the snippet the diff amounts to, likely at best: the diff did not place itself."""
    merged = merge(original, as_snippet(patch, language, original), language)
    return MergeResult(merged.text, NONE if merged.text is None else LIKELY, (why,) + merged.reasons, merged.span)


def as_update(patch: Patch, original: str, language: str | None) -> str:
    """The update snippet a diff is read as (by a model, and by the checks of its answer): the snippet it
    amounts to (``as_snippet``), of its hunks as placed where every hunk places itself (exactly, or but
    for context lines that differ from the file), so that the file's own context lines are shown, not a
    stale diff's."""
    placed = _place(original, patch)
    return as_snippet(patch if isinstance(placed, str) else placed[3], language, original)


def as_snippet(patch: Patch, language: str | None, original: str = "") -> str:
    """The update snippet a diff amounts to: each hunk's context and new lines, lazy markers between
    and around them, each indented like the line after it (the last like the line before it: the code
    after a hunk may go on in its block). No marker stands before a hunk that starts at the file's first
    line or after one that ends at its last (by its header's numbers, or its first or last old line being
    the file's): a model copies a marker that stands for nothing. What a model is shown of a diff, and
    what the merge engine places where the diff does not place itself."""
    lines = _lines(original)
    out: list[str] = []
    for n, hunk in enumerate(patch.hunks):
        shown = hunk.new
        if not (n == 0 and lines and (hunk.start == 1 or hunk.old[:1] == lines[:1])):
            out.append(marker_like(next((line for line in shown if line.strip()), ""), language))
        out += shown
    last = patch.hunks[-1]  # its last old line by its numbers (a hunk of new lines alone: the line it follows)
    reaches_end = last.at_end or (last.start is not None and last.start + len(last.old) - bool(last.old) >= len(lines))
    if not (lines and (reaches_end or last.old[-1:] == lines[-1:])):
        out.append(marker_like(next((line for line in reversed(out) if line.strip()), ""), language))
    return "\n".join(out) + "\n"
