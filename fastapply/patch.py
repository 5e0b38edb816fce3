"""Edits written as a diff: a unified diff (``git diff``, ``diff -u``, the ``@@`` hunks chat models
write, the ``*** Begin Patch`` form of coding agents) or SEARCH/REPLACE blocks, applied line for line.

A hunk's old lines (its context and the lines it deletes) are looked for in the file, exactly or but
for trailing whitespace: found once, or, where found more than once, at the line its header names
(where the headers' numbers add up as a tool writes them, ``_add_up``), they give way to its new
lines, the file's own text kept for its context lines. A diff whose every hunk is placed so, none
overlapping, is ``certain``: it says exactly what to change and where, unless a hunk found once is not
at the line its header names while another was placed by its number. A hunk of new lines alone (``diff
-U0``) is placed by its header's number, certain only where the hunks found once in the file are each
at the line their headers name (a chat model's numbers may add up and still be wrong). A hunk found
nowhere as written whose context is stale (``_stale``: its deleted lines and most of its context in
one place) is placed there, ``likely``. A diff with a hunk not placed at all is read as the update
snippet it amounts to (``as_snippet``: each hunk's context and new lines between lazy markers), which
the merge engine places, ``likely`` at best. A model reads a diff as that snippet, of its hunks as
placed where they are (``as_update``).

>>> patch = read_patch("@@ -1,2 +1,2 @@\\n a = 1\\n-b = 2\\n+b = 3\\n")
>>> result = apply_patch("a = 1\\nb = 2\\nc = 4\\n", patch, "python")
>>> result.confidence, result.text
('certain', 'a = 1\\nb = 3\\nc = 4\\n')
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fastapply.errors import UsageError
from fastapply.merge import CERTAIN, LIKELY, NONE, MergeResult, merge
from fastapply.snippet import DEFAULT_MARKER
from fastapply.syntax import comment, count_errors

_NUMBERED = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SEARCH = re.compile(r"^<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} ?REPLACE\s*$")
_FENCE = re.compile(r"^```[\w+-]*\s*$")
_HEADERS = ("diff --git ", "index ", "--- ", "+++ ", "old mode ", "new mode ", "similarity index ", "rename from ",
            "rename to ", "copy from ", "copy to ", "new file mode ", "*** Begin Patch", "*** End Patch",
            "*** End of File", "*** Update File: ")
_OTHER_FILES = ("*** Add File: ", "*** Delete File: ", "deleted file mode ", "+++ /dev/null")


@dataclass(frozen=True)
class Hunk:
    ops: tuple[tuple[str, str], ...]  # (" " kept, "-" deleted or "+" added, the line without its newline)
    start: int | None = None  # the original's 1-based line its header names (0: before the first), if any
    new_start: int | None = None  # and the new file's

    @property
    def old(self) -> list[str]:
        return [line for kind, line in self.ops if kind != "+"]

    @property
    def new(self) -> list[str]:
        return [line for kind, line in self.ops if kind != "-"]


@dataclass(frozen=True)
class Patch:
    hunks: tuple[Hunk, ...]
    final_newline: bool | None = None  # "\ No newline at end of file": False where the new file lacks one,
    # True where only the old one did; None where the diff does not say
    creates: bool = False  # the diff's old file is /dev/null
    numbers_add_up: bool = False  # each numbered hunk's new line is its old one moved by the hunks before it


def read_patch(edit: str, original: str = "") -> Patch | None:
    """The diff ``edit`` is, or None where it is not one (a snippet, an instruction). Every line outside
    its hunks must be a diff's header or blank, or, where the edit holds code fences, outside them (the
    words of a chat model's answer, unless the file has code fences of its own); a diff of several files
    is a usage error. A file that itself holds hunk headers or SEARCH markers (a patch, notes on diffs) is
    edited only by snippets: an edit of it may be its own text."""
    if "@@" not in edit and "SEARCH" not in edit:
        return None
    file_lines = original.split("\n")
    if any(line.startswith("@@ -") or _SEARCH.match(line) for line in file_lines):
        return None
    return _read(edit.replace("\r\n", "\n"), any(_FENCE.match(line) for line in file_lines))


@lru_cache(maxsize=8)
def _read(edit: str, original_holds_fences: bool) -> Patch | None:
    lines = edit.split("\n")
    if any(_SEARCH.match(line) for line in lines):
        return _search_replace(lines)
    fences = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    if len(fences) >= 2 and not original_holds_fences:  # a chat model's answer: the diff is what its code fences
        # hold, the words around them aside (in a file with fences of its own, they may be the file's own)
        lines = [line for start, end in zip(fences[::2], fences[1::2]) for line in lines[start + 1:end]]
    return _unified(lines)


def _unified(lines: list[str]) -> Patch | None:
    hunks: list[Hunk] = []
    files: set[str] = set()
    final_newline, creates, i = None, False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@"):
            hunk, i, eof = _hunk(lines, i)
            hunks.append(hunk)
            final_newline = eof if eof is not None else final_newline
        elif line.startswith(_OTHER_FILES):
            raise UsageError(f"the diff adds or deletes a file ({line.strip()}); fastapply applies an edit to the "
                             f"file it is given")
        elif line.startswith(("+++ ", "*** Update File: ")):
            files.add(_path(line))
            i += 1
        elif line.startswith(_HEADERS) or not line.strip():
            creates = creates or line.startswith("--- /dev/null")
            i += 1
        else:
            return None  # a line no diff holds here: not a diff
    if not hunks:
        return None
    if len(files) > 1:
        raise UsageError(f"the diff edits {len(files)} files ({', '.join(sorted(files))}); fastapply FILE applies an "
                         f"edit to one file: give it that file's part, or the whole diff to fastapply batch --patch")
    return Patch(tuple(hunks), final_newline, creates, _add_up(hunks))


def _add_up(hunks: list[Hunk]) -> bool:
    """Whether the numbered hunks' headers agree with each other as a tool writes them: each names the
    line of the new file that its old line becomes after the lines the hunks before it add and delete
    (a hunk of no old or no new lines names the line before). A chat model's numbers seldom do."""
    moved, numbered = 0, False
    for hunk in hunks:
        if hunk.start is not None and hunk.new_start is not None:
            numbered = True
            if hunk.new_start + (not hunk.new) - (hunk.start + (not hunk.old)) != moved:
                return False
        moved += len(hunk.new) - len(hunk.old)
    return numbered


def _hunk(lines: list[str], i: int) -> tuple[Hunk, int, bool | None]:
    """The hunk whose header is ``lines[i]``, the index after it, and what it says of the final newline.
    It runs on while its lines are a hunk's, past a numbered header's counts too (chat models miscount),
    where an empty line ends it; a ``--- `` line ends it only with a ``+++ `` line after it (a deleted
    ``-- comment`` line is the hunk's)."""
    numbered = _NUMBERED.match(lines[i])
    start, new_start = (int(numbered.group(1)), int(numbered.group(3))) if numbered else (None, None)
    wanted = (int(numbered.group(2) or 1), int(numbered.group(4) or 1)) if numbered else None
    ops: list[tuple[str, str]] = []
    bare: list[bool] = []  # the op was an empty line (a blank context line whose space was stripped)
    old = new = 0
    final_newline = None
    j = i + 1
    while j < len(lines):
        line = lines[j]
        if line.startswith("\\"):  # "\ No newline at end of file", of the line before
            if ops:
                final_newline = False if ops[-1][0] != "-" else True
            j += 1
            continue
        counted = wanted is not None and old >= wanted[0] and new >= wanted[1]
        if _ends_hunk(lines, j) or (line[:1] not in (" ", "-", "+") and (line or counted)):
            break
        kind, text = (line[0], line[1:]) if line else (" ", "")
        ops.append((kind, text))
        bare.append(not line)
        old += kind != "+"
        new += kind != "-"
        j += 1
    while bare and bare[-1]:  # empty lines at a hunk's end are the gap before what follows, not context
        ops.pop()
        bare.pop()
    return Hunk(tuple(ops), start, new_start), j, final_newline


def _path(line: str) -> str:
    """The file a ``+++ b/path``, ``--- a/path`` or ``*** Update File: path`` line names (git's a/, b/ dropped)."""
    if line.startswith("*** "):
        return line.split(": ", 1)[-1].strip()
    return line[4:].split("\t")[0].strip().removeprefix("a/" if line.startswith("--- ") else "b/")


def _ends_hunk(lines: list[str], j: int) -> bool:
    line = lines[j]
    return (line.startswith(("@@", "diff --git ", "*** "))
            or (line.startswith("--- ") and j + 1 < len(lines) and lines[j + 1].startswith("+++ ")))


def _search_replace(lines: list[str]) -> Patch:
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            i += 1  # a file name, a fence, words around the blocks
            continue
        divider = next((j for j in range(i + 1, len(lines)) if _DIVIDER.match(lines[j])), None)
        end = next((j for j in range(divider + 1, len(lines)) if _REPLACE.match(lines[j])), None) \
            if divider is not None else None
        if end is None:
            raise UsageError(f"the SEARCH/REPLACE block at line {i + 1} of the edit has no "
                             f"{'=======' if divider is None else '>>>>>>> REPLACE'} line")
        search, replace = lines[i + 1:divider], lines[divider + 1:end]
        ops: list[tuple[str, str]] = []
        for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, search, replace, autojunk=False).get_opcodes():
            if tag == "equal":
                ops += [(" ", line) for line in search[a1:a2]]
            else:
                ops += [("-", line) for line in search[a1:a2]] + [("+", line) for line in replace[b1:b2]]
        hunks.append(Hunk(tuple(ops)))
        i = end + 1
    return Patch(tuple(hunks))


def split_files(diff: str) -> list[tuple[int, str, str]]:
    """Each file's part of a diff of one or more files (``git diff``, ``diff -ru``, ``*** Begin Patch``):
    (the 1-based line it starts on, the file's path as the diff names it, git's ``b/`` dropped, the part).
    Raises UsageError where the text holds no file's part."""
    lines = diff.replace("\r\n", "\n").split("\n")
    starts: list[int] = []
    for i, line in enumerate(lines):
        names = line.startswith(("diff --git ", "*** Update File: ", "*** Add File: ", "*** Delete File: "))
        pair = line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        if names or (pair and (not starts or any(lines[k].startswith("@@") for k in range(starts[-1], i)))):
            starts.append(i)
    parts = []
    for start, end in zip(starts, starts[1:] + [len(lines)]):
        part = lines[start:end]
        named = next((line for line in part if line.startswith(("+++ ", "*** "))), "")
        if named.startswith("+++ /dev/null"):  # a deleted file: named by its old path
            named = next((line for line in part if line.startswith("--- ")), named)
        path = _path(named) if named else ""
        if path and path != "/dev/null":
            parts.append((start + 1, path, "\n".join(part).strip("\n") + "\n"))
    if not parts:
        raise UsageError("the patch names no file (a diff with --- and +++ lines, or *** Update File:)")
    return parts


def part_for(edit: str, path: str) -> str:
    """The part of ``edit`` for the file at ``path`` where ``edit`` is a diff of several files and one of
    them is that file (the diff's path the same as the end of ``path``'s, as ``git diff`` from the
    repository's root names it); else ``edit`` as it is."""
    if ("\n+++ " not in edit and "*** Update File: " not in edit) or path == "-":
        return edit
    try:
        parts = split_files(edit)
    except UsageError:
        return edit
    mine = [part for _, name, part in parts
            if Path(path).resolve().parts[-len(Path(name).parts):] == Path(name).parts]
    return mine[0] if len(parts) > 1 and len(mine) == 1 else edit


def apply_patch(original: str, patch: Patch, language: str | None) -> MergeResult:
    """``patch`` applied to ``original`` (LF text): certain where every hunk is placed, as above."""
    if patch.creates and original.strip():
        return MergeResult(None, NONE, ("the diff creates the file, which is not empty",))
    placed = _place(original, patch)
    if isinstance(placed, str):
        return _as_snippet_merge(original, patch, language, placed)
    text, span, doubts, _ = placed
    if language is not None and count_errors(text, language) > count_errors(original, language):
        doubts.append("the patched file has more syntax errors than the original")
    return MergeResult(text, LIKELY if doubts else CERTAIN, tuple(doubts), span)


def _place(original: str, patch: Patch) -> tuple[str, tuple[int, int], list[str], Patch] | str:
    """The file with every hunk placed (its text, the span of original lines the hunks cover, the doubts
    of their placing, and the hunks as placed: numbered where they stand, their context lines the file's
    own), or why a hunk cannot be placed."""
    lines = _lines(original)
    placed: list[tuple[int, int, Hunk]] = []
    doubts: list[str] = []
    borne_out = None  # whether the hunks found once are each at the line their headers name (None: no such hunk)
    by_number: list[Hunk] = []  # hunks placed by their headers' numbers
    for n, hunk in enumerate(patch.hunks, 1):
        old = hunk.old
        found = _occurrences(lines, old) if old else []
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
        elif old and not found and (fuzzy := _stale(lines, hunk)) is not None:
            at, missed = fuzzy
            placed.append((at, at + len(old), hunk))
            doubts.append(f"hunk {n}'s context differs from the file in {missed} line(s), which are kept as the file "
                          f"has them")
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
    return text, (placed[0][0], placed[-1][1]), doubts, Patch(tuple(as_placed), patch.final_newline)


def _old_index(ops: tuple[tuple[str, str], ...]) -> list[int]:
    """For each op, how many old lines come before it in its hunk."""
    index, seen = [], 0
    for kind, _ in ops:
        index.append(seen)
        seen += kind != "+"
    return index


def _stale(lines: list[str], hunk: Hunk) -> tuple[int, int] | None:
    """Where a hunk whose old lines are nowhere in the file stands but for some of its context lines
    (a diff written against an older file, or a chat model misremembering a line), and how many differ:
    the one place where every line it deletes is the file's (but for trailing whitespace), and all its
    context lines but at most a third of them (at least one), with two non-blank lines the same."""
    old = [(kind, line.rstrip()) for kind, line in hunk.ops if kind != "+"]
    allowed = max(1, sum(kind == " " for kind, _ in old) // 3)
    have = [line.rstrip() for line in lines]
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


def _lines(text: str) -> list[str]:
    """The lines of LF text, without their newlines (none for an empty text)."""
    return text.removesuffix("\n").split("\n") if text else []


def _occurrences(lines: list[str], old: list[str]) -> list[int]:
    """Where ``old`` runs in ``lines``: exactly, or where it is nowhere so, but for trailing whitespace."""
    for key in (lambda line: line, str.rstrip):
        want = [key(line) for line in old]
        have = [key(line) for line in lines]
        found = [i for i in range(len(have) - len(want) + 1) if have[i] == want[0] and have[i:i + len(want)] == want]
        if found:
            return found
    return []


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
        first = next((line for line in shown if line.strip()), "")
        if not (n == 0 and lines and (hunk.start == 1 or hunk.old[:1] == lines[:1])):
            out.append(first[: len(first) - len(first.lstrip())] + comment(language, DEFAULT_MARKER))
        out += shown
    last = patch.hunks[-1]  # its last old line by its numbers (a hunk of new lines alone: the line it follows)
    reaches_end = last.start is not None and last.start + len(last.old) - bool(last.old) >= len(lines)
    if not (lines and (reaches_end or last.old[-1:] == lines[-1:])):
        before = next((line for line in reversed(out) if line.strip()), "")
        out.append(before[: len(before) - len(before.lstrip())] + comment(language, DEFAULT_MARKER))
    return "\n".join(out) + "\n"
