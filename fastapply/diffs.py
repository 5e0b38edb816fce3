"""Reading an edit written as a diff: a unified diff (``git diff``, ``diff -u``, the ``@@`` hunks chat
models write, the ``*** Begin Patch`` form of coding agents) or SEARCH/REPLACE blocks (aider's, Cline's,
Roo Code's), or the mail ``git format-patch`` writes; and a diff of several files split into each file's
part, with what it does to the file (edits, creates, deletes or moves it). ``patch.py`` places what is
read here in the file.

>>> patch = read_patch("@@ -1,2 +1,2 @@\\n a = 1\\n-b = 2\\n+b = 3\\n")
>>> patch.hunks[0].old, patch.hunks[0].new
(['a = 1', 'b = 2'], ['a = 1', 'b = 3'])
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from fastapply.contextdiff import STARS, as_unified, holds_context_hunk
from fastapply.errors import FastapplyError, UsageError
from fastapply.fileio import TextFormat, decode

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SEARCH = re.compile(r"^(?:<{5,9}|-{5,9}) ?SEARCH\s*$")  # aider's <<<<<<< SEARCH, Cline's ------- SEARCH
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^(?:>{5,9}|\+{5,9}) ?REPLACE\s*$")
_LINE_HINT = re.compile(r"^:(start|end)_line:\s*(\d+)\s*$")  # Roo Code's, then a ------- line
_SEPARATOR = re.compile(r"^-{5,9}\s*$")
# A commit's first line: of the mail git format-patch writes, or of git log -p's and git show's text
COMMIT_LINE = re.compile(r"From [0-9a-f]{40} |commit [0-9a-f]{40}(?:[0-9a-f]{24})?(?: \(.+\))?$")
_DIFF_COMMAND = re.compile(r"^diff (?:--?[A-Za-z][^ ]* )+\S")  # the line diff -ru (hg diff) writes before a part
_SVN_INDEX = re.compile(r"^Index: \S")  # svn diff's (and CVS's) line before a part, a rule of = after it
_RULE = re.compile(r"^={20,}$")
_CVS = ("RCS file: ", "retrieving revision ")  # CVS's lines between the rule and its diff command
_ONLY_IN = re.compile(r"^Only in (.+): (.+)$")  # diff -r's file on one side alone (without -N: no lines of it)
_DIFFER = re.compile(r"^(?:Binary files|Files) (.+) and (.+) differ$")  # diff -r's binary file, git's without --binary
INDEX_LINE = re.compile(r"^index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})(?: [0-7]{6})?\s*$")  # git's object ids
_HEADERS = ("diff --git ", "index ", "--- ", "+++ ", "old mode ", "new mode ", "similarity index ", "rename from ",
            "rename to ", "copy from ", "copy to ", "new file mode ", "*** Begin Patch", "*** End Patch",
            "*** End of File", "*** Update File: ", "*** Move to: ")
_DELETES = ("*** Delete File: ", "deleted file mode ", "+++ /dev/null")
_COMBINED = ("diff --cc ", "diff --combined ")  # git's diff of a merge against its parents (git show MERGE)
_STARTS = ("diff --git ", "*** Update File: ", "*** Add File: ", "*** Delete File: ") + _COMBINED  # a part starts
_MERGE = ("a merge commit's combined diff (diff --cc), whose @@@ hunks show the merge against each of its parents "
          "at once: git diff MERGE^ MERGE gives its diff against the first parent, to apply")


@dataclass(frozen=True)
class Hunk:
    ops: tuple[tuple[str, str], ...]  # (" " kept, "-" deleted or "+" added, the line without its newline)
    start: int | None = None  # the original's 1-based line its header names (0: before the first), if any
    new_start: int | None = None  # and the new file's
    scope: tuple[str, ...] = ()  # the lines its bare ``@@ class A`` headers name, outermost first (stripped)
    at_end: bool = False  # a ``*** End of File`` line follows it: its lines end the file

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
    blobs: tuple[str, str] | None = None  # git's "index OLD..NEW" line: the file's object ids before and after


def read_patch(edit: str, original: str = "") -> Patch | None:
    """The diff ``edit`` is, or None where it is not one (a snippet, an instruction). Every line outside
    its hunks must be a diff's header or blank (a chat model's answer is read for the code its fences
    hold first, ``answer.py``); a diff of several files is a usage error. A file that itself holds hunk
    headers or SEARCH markers (a patch, notes on diffs) is edited only by snippets, an edit of it may be
    its own text, unless git's ``index`` line names this very file: then the edit is git's diff of it."""
    if "@@" not in edit and "SEARCH" not in edit and "*** Add File: " not in edit and "*** Delete File: " not in edit \
            and STARS not in edit:
        return None
    edit = _unmailed(edit.replace("\r\n", "\n"))
    if not (any(line.startswith("@@ -") or _SEARCH.match(line) for line in original.split("\n"))
            or holds_context_hunk(original)):
        return _read(edit)
    try:
        patch = _read(edit)
    except UsageError:
        return None  # the file's own text
    named = patch is not None and patch.blobs is not None and named_ends(patch.blobs[0], original) is not None
    return patch if named else None


@lru_cache(maxsize=8)
def _read(edit: str) -> Patch | None:
    lines = as_unified(edit).split("\n")
    return _search_replace(lines) if any(_SEARCH.match(line) for line in lines) else _unified(lines)


def _unmailed(text: str) -> str:
    """The diffs of the commits that ``git format-patch`` wrote as mails, or ``git log -p`` or ``git show``
    showed: each commit's header, message and summary (before its first ``diff --git`` line) and a mail's
    signature (``-- ``, then git's version) blanked, their lines kept so that a part's line is the input's;
    any other text as it is."""
    lines = text.split("\n")
    if not COMMIT_LINE.match(lines[0]):
        return text
    kept, diff = [], False
    for i, line in enumerate(lines):
        if COMMIT_LINE.match(line) or signs(lines, i):
            diff = False
        elif line.startswith(("diff --git ",) + _COMBINED):
            diff = True
        kept.append(line if diff else "")
    return "\n".join(kept)


def signs(lines: list[str], i: int) -> bool:
    """Whether ``lines[i]`` opens the signature of a mail ``git format-patch`` wrote (``-- ``, then git's
    version)."""
    return lines[i].removesuffix("\r") == "-- " and i + 1 < len(lines) and bool(re.match(r"\d+\.\d+", lines[i + 1]))


def named_ends(object_id: str, text: str) -> bool | None:
    """The line ends with which git's object id names the file of LF text ``text``: CRLF (True), LF
    (False), or None where it names neither."""
    return next((crlf for crlf in (False, True) if names_blob(object_id, text, crlf)), None)


def names_blob(object_id: str, data: bytes | str, crlf: bool = False) -> bool:
    """Whether git's object id (SHA-1, or SHA-256 in a repository of that format, shortened to at least 7
    hex digits) names the file of bytes ``data``, or of LF text ``data`` (stored with CRLF line ends where
    ``crlf``).

    >>> names_blob("e69de29", ""), names_blob("78981922", b"a\\n")
    (True, True)
    """
    if isinstance(data, str):
        data = (data.replace("\n", "\r\n") if crlf else data).encode()
    return any(blob_id(data, name).startswith(object_id) for name in ("sha1", "sha256"))


def blob_id(data: bytes, hash_name: str = "sha1") -> str:
    """git's object id of the file of bytes ``data`` (``sha256`` in a repository of that format)."""
    return hashlib.new(hash_name, b"blob %d\0" % len(data) + data).hexdigest()


def _unified(lines: list[str]) -> Patch | None:
    hunks: list[Hunk] = []
    files: set[str] = set()
    final_newline, creates, blobs, i = None, False, None, 0
    first = next((k for k, line in enumerate(lines) if line.startswith("@@")), len(lines))
    exact = any(_made_by_tool(line) for line in lines[:first])  # its hunks' counts are to be kept to
    while i < len(lines):
        line = lines[i]
        if line.startswith(_COMBINED + ("@@@ ",)):
            raise UsageError(f"the diff is {_MERGE}")
        if line.startswith("@@"):
            hunk, i, eof = _hunk(lines, i, exact)
            hunks.append(hunk)
            final_newline = eof if eof is not None else final_newline
        elif line.startswith(_DELETES):
            raise UsageError(f"the diff deletes a file ({line.strip()}); fastapply FILE applies an edit to the file "
                             f"it is given: give the whole diff to fastapply batch --patch")
        elif line.startswith(("new file mode ", "new mode ", "index ")) and line.rstrip().endswith(" 120000"):
            raise UsageError("the diff changes a symbolic link (mode 120000), not a file's text: give it to fastapply "
                             "batch --patch")
        elif line.startswith("*** Add File: "):  # the new file's lines follow, each after a +
            files.add(_path(line))
            end = next((j for j in range(i + 1, len(lines)) if not lines[j].startswith("+")), len(lines))
            hunks.append(Hunk(tuple(("+", new[1:]) for new in lines[i + 1:end]), 0, 1))
            creates, i = True, end
        elif line.strip() == "*** End of File" and hunks:
            hunks[-1] = replace(hunks[-1], at_end=True)
            i += 1
        elif line.startswith(("+++ ", "*** Update File: ")):
            files.add(_path(line))
            i += 1
        elif (line.startswith(_HEADERS + _CVS) or _DIFF_COMMAND.match(line) or _SVN_INDEX.match(line)
              or _RULE.match(line) or not line.strip()):
            creates = creates or line.startswith("--- /dev/null")
            blobs = (index.group(1), index.group(2)) if (index := INDEX_LINE.match(line)) else blobs
            i += 1
        else:
            return None  # a line no diff holds here: not a diff
    if not hunks:
        return None
    if len(files) > 1:
        raise UsageError(f"the diff edits {len(files)} files ({', '.join(sorted(files))}); fastapply FILE applies an "
                         f"edit to one file: give it that file's part, or the whole diff to fastapply batch --patch")
    return Patch(tuple(hunks), final_newline, creates, _add_up(hunks), blobs)


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


def _hunk(lines: list[str], i: int, exact: bool = False) -> tuple[Hunk, int, bool | None]:
    """The hunk whose header is ``lines[i]``, the index after it, and what it says of the final newline.
    It runs on while its lines are a hunk's, past a numbered header's counts too (chat models miscount),
    where an empty line ends it; a ``--- `` line ends it only with a ``+++ `` line after it (a deleted
    ``-- comment`` line is the hunk's), and, ``exact`` (a tool's diff: git's, ``diff -r``'s), only once
    its counts are met (a deleted ``-- x`` line before an added ``++ y``). A bare header's words name the
    hunk's scope (``@@ class A``, and under it ``@@     def f(self):``, as the ``*** Begin Patch`` form
    writes them where its lines are found more than once), each a line of the file that comes before the
    hunk's lines."""
    numbered = HUNK_HEADER.match(lines[i])
    scope: list[str] = []
    while not numbered and i + 1 < len(lines) and lines[i + 1].startswith("@@") and not HUNK_HEADER.match(lines[i + 1]):
        scope.append(lines[i])  # headers one under another: each names a scope within the one before
        i += 1
    if not numbered:
        scope.append(lines[i])
    scope = [named for line in scope if (named := line[2:].removesuffix("@@").strip())]
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
        owed = exact and wanted is not None and not counted and line.startswith("--- ")  # the hunk's own line
        if (_ends_hunk(lines, j) and not owed) or (line[:1] not in (" ", "-", "+") and (line or counted)):
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
    return Hunk(tuple(ops), start, new_start, tuple(scope)), j, final_newline


def _path(line: str, strip: int | None = None) -> str:
    """The file a ``+++ b/path``, ``--- a/path`` or ``*** Update File: path`` line names (its quotes taken
    off; ``strip`` as ``split_files``'s)."""
    if line.startswith("*** "):
        return _stripped(line.split(": ", 1)[-1].strip(), strip and strip - 1)
    return _stripped(_unquoted(line[4:].split("\t")[0].strip()), strip, "a/" if line.startswith("--- ") else "b/")


_ESCAPED = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13}


def _unquoted(name: str) -> str:
    r"""A path as git quotes one that holds other than printable ASCII (``"a/utf-8 \355\225\234.txt"``:
    C escapes, octal bytes of its UTF-8), unquoted; any other as it is.

    >>> _unquoted(r'"b/caf\303\251 \"menu\".txt"')
    'b/café "menu".txt'
    """
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    return re.sub(rb"\\([0-7]{3}|.)", lambda m: bytes([int(m[1], 8)]) if len(m[1]) == 3 else
                  bytes([_ESCAPED.get(m[1], m[1][0])]), name[1:-1].encode()).decode("utf-8", "replace")


def _made_by_tool(line: str) -> bool:
    """Whether a part's header line is one a tool writes (git's ``diff --git``, ``diff -r``'s or hg's
    command line, svn's ``Index:``): its hunks' counts are right."""
    return line.startswith("diff --git ") or bool(_DIFF_COMMAND.match(line) or _SVN_INDEX.match(line))


def _ends_hunk(lines: list[str], j: int) -> bool:
    line = lines[j]
    return (line.startswith(("@@", "diff --git ", "*** "))
            or (line.startswith("--- ") and j + 1 < len(lines) and lines[j + 1].startswith("+++ ")))


def _search_replace(lines: list[str]) -> Patch:
    """SEARCH/REPLACE blocks as aider writes them (``<<<<<<< SEARCH``, ``=======``, ``>>>>>>> REPLACE``),
    Cline (``------- SEARCH``, ``+++++++ REPLACE``) or Roo Code (a ``:start_line:N`` line and a ``-------``
    line after ``<<<<<<< SEARCH``: the hunk's number, no line of the file), each block one hunk."""
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
                             f"{'=======' if divider is None else 'REPLACE'} line")
        search, replace = lines[i + 1:divider], lines[divider + 1:end]
        hints = {}
        while search and (hint := _LINE_HINT.match(search[0])):
            hints[hint.group(1)] = int(hint.group(2))
            search = search[1:]
        if search and _SEPARATOR.match(search[0]) and (hints or replace[:1] != search[:1]):
            search = search[1:]  # Roo Code's separator, not a line of the file (which the REPLACE part would keep)
        ops: list[tuple[str, str]] = []
        for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, search, replace, autojunk=False).get_opcodes():
            if tag == "equal":
                ops += [(" ", line) for line in search[a1:a2]]
            else:
                ops += [("-", line) for line in search[a1:a2]] + [("+", line) for line in replace[b1:b2]]
        hunks.append(Hunk(tuple(ops), hints.get("start")))
        i = end + 1
    return Patch(tuple(hunks))


@dataclass(frozen=True)
class FilePart:
    """One file's part of a diff of several files."""

    line: int  # the 1-based line of the diff it starts on
    path: str  # the file it leaves, as the diff names it (git's b/ dropped): a moved file's new path
    text: str  # its lines
    action: str = "edit"  # edit, create (a new file), delete, move (a file renamed, maybe edited too) or copy
    source: str | None = None  # a moved file's old path, a copy's original
    problem: str = ""  # why it cannot be applied, where it cannot (a binary file's change the diff does not hold)
    mode: int | None = None  # the file's mode where the diff gives it (git's ``new mode 100755``)
    blob: str | None = None  # the file's git object id before the change (its ``index`` line), where given
    ends: TextFormat | None = None  # a file it creates with other than LF line ends: those its lines have in the diff
    commit: int = 0  # of a series of commits (``git format-patch``'s mails, ``git log -p``), the one it is in (from 0)
    link: bool = False  # a symbolic link made, pointed elsewhere or deleted (git's mode 120000): its lines are targets
    new_blob: str | None = None  # the file's git object id after the change, where its ``index`` line gives it

    @property
    def hunks(self) -> bool:
        """Whether the part changes the file's text: holds hunks, or is an ``*** Add File:`` part (a file
        created empty, moved or given a mode alone is not changed so)."""
        return self.text.startswith("*** Add File: ") or any(line.startswith("@@") for line in self.text.split("\n"))


def split_files(diff: str, strip: int | None = None) -> list[FilePart]:
    """Each file's part of a diff of one or more files (``git diff``, ``diff -ru``, ``*** Begin Patch``),
    with what it does to the file: edits it, creates it (``new file mode``, ``--- /dev/null``, ``*** Add
    File:``), deletes it (``deleted file mode``, ``+++ /dev/null``, ``*** Delete File:``), moves it
    (``rename from`` / ``rename to``, ``*** Move to:``) or copies another (``copy from`` / ``copy to``); a
    file ``diff -r`` says is on one side only, or binary, is a part that cannot be applied. Paths lose
    their first ``strip`` folders (``-p``), or, None, the folder that names each side (git's ``a/`` and
    ``b/``, ``diff -ru old new``'s, ``_sides``). Raises UsageError where the text holds no file's part. Of
    a chat model's answer, the diff its code blocks hold (``answer.code_of``)."""
    from fastapply.answer import code_of

    diff = as_unified(diff)
    text = diff.replace("\r\n", "\n")
    code = code_of(text)
    raw = diff.split("\n") if code == text else None  # the lines with their CRs (not of an answer's blocks)
    mails = list(itertools.accumulate(bool(COMMIT_LINE.match(line)) for line in code.split("\n")))
    lines = _unmailed(code).split("\n")
    starts: list[int] = []
    owed = None  # a tool's numbered hunk's lines still to come (old, new): none of them starts a part
    for i, line in enumerate(lines):
        if owed is not None and (line[:1] in (" ", "-", "+", "\\") or not line):
            if not line.startswith("\\"):
                owed = (owed[0] - (line[:1] != "+"), owed[1] - (line[:1] != "-"))
            owed = owed if owed[0] > 0 or owed[1] > 0 else None
            continue
        owed = None
        if (numbered := HUNK_HEADER.match(line)) and starts and _made_by_tool(lines[starts[-1]]):
            owed = (int(numbered.group(2) or 1), int(numbered.group(4) or 1))
            owed = owed if owed[0] > 0 or owed[1] > 0 else None
        after = lines[i + 1] if i + 1 < len(lines) else ""
        pair = line.startswith("--- ") and after.startswith("+++ ")
        alone = _ONLY_IN.match(line) or (_DIFFER.match(line) and not (i and lines[i - 1].startswith(_HEADERS)))
        preamble = ((_DIFF_COMMAND.match(line) and after.startswith("--- "))
                    or (_SVN_INDEX.match(line) and _RULE.match(after)))
        if (line.startswith(_STARTS) or alone or preamble
                or (pair and (not starts or _ONLY_IN.match(lines[starts[-1]]) or _DIFFER.match(lines[starts[-1]])
                              or any(lines[k].startswith("@@") for k in range(starts[-1], i))))):
            starts.append(i)
    strip = _sides(lines) if strip is None else strip
    parts = [_file_part(start + 1, lines[start:end], raw and raw[start:end], strip)
             for start, end in zip(starts, starts[1:] + [len(lines)])]
    parts = [replace(part, commit=max(mails[part.line - 1] - 1, 0)) for part in parts if part is not None]
    if not parts:
        raise UsageError("the patch names no file (a diff with --- and +++ lines, or *** Update File:)")
    if (turned := _newest_first(parts)) is not None:
        raise UsageError(f"the diff's commits come newest first (an earlier commit changes {turned} from what a later "
                         f"one makes it): give them oldest first, as git log -p --reverse shows them")
    return parts


def _newest_first(parts: list[FilePart]) -> str | None:
    """A file whose git ids say that a series' commits come newest first (``git log -p`` without
    ``--reverse``): an earlier commit changes it from what a later one makes it (the later part's new id is
    the earlier one's old id), and no file's ids follow on the other way; else None."""
    seen: dict[str, tuple[int, str, str]] = {}  # path -> the last part's (commit, old id, new id)
    backward, forward = None, False
    for part in parts:
        old, new = part.blob, part.new_blob
        if old is None or new is None:
            continue
        if part.path in seen and seen[part.path][0] < part.commit:
            _, was_old, was_new = seen[part.path]
            forward = forward or _same_id(was_new, old)
            backward = backward or (part.path if _same_id(new, was_old) and not _same_id(was_new, old) else None)
        seen[part.path] = (part.commit, old, new)
    return backward if backward and not forward else None


def _same_id(one: str, other: str) -> bool:
    """Whether two git object ids, either shortened, name the same object."""
    return one.startswith(other) or other.startswith(one)


def _sides(lines: list[str]) -> int | None:
    """1 where every ``---`` / ``+++`` pair of a diff (and ``Binary files X and Y differ`` line) names its
    file under a folder of each side's own, the same path below it (git's ``a/`` and ``b/``, ``diff -ru
    old new``): those folders are dropped; else None (git's ``a/`` and ``b/`` dropped where a path has
    them)."""
    names = [(_path(old, 0), _path(new, 0)) for old, new in zip(lines, lines[1:])
             if old.startswith("--- ") and new.startswith("+++ ")]
    names += [(differ[1], differ[2]) for line in lines if (differ := _DIFFER.match(line))]  # diff -r's binary files
    pairs = [(old.split("/", 1), new.split("/", 1)) for old, new in names if "/dev/null" not in (old, new)]
    same = all(len(old) == len(new) == 2 and old[0] != new[0] and old[1] == new[1] for old, new in pairs)
    return 1 if pairs and same else None


def _stripped(name: str, strip: int | None, side: str = "") -> str:
    """A path as a diff names it without its first ``strip`` folders (``-p``); None: without git's ``a/``
    or ``b/`` (``side``) where it has it."""
    if strip is None or name == "/dev/null":
        return name.removeprefix(side) if side else name
    folders = name.split("/")
    if strip >= len(folders):
        raise UsageError(f"cannot take {strip} folder(s) off the diff's path {name} (-p {strip})")
    return "/".join(folders[strip:])


def _file_part(line: int, part: list[str], raw: list[str] | None, strip: int | None) -> FilePart | None:
    """The part of a diff that starts on ``line``, read from its header (the lines before its first hunk);
    ``raw``: its lines with the CRs they end in, where known; ``strip`` as ``split_files``'s."""
    text = "\n".join(part).strip("\n") + "\n"
    header = part[:next((k for k, said in enumerate(part) if said.startswith("@@")), len(part))]
    plain = strip and strip - 1  # the -p of a path written without git's a/ or b/ (rename from, *** lines)

    def named(prefix: str) -> str | None:  # what a header line says (a mode; a path: ``path``)
        return next((_unquoted(said[len(prefix):].strip()) for said in header if said.startswith(prefix)), None)

    def path(prefix: str) -> str | None:
        return None if (name := named(prefix)) is None else _stripped(name, plain)

    if (only := _ONLY_IN.match(part[0])) or (differ := _DIFFER.match(part[0])):
        name = f"{only[1].rstrip('/')}/{only[2]}" if only else differ[2] if differ[2] != "/dev/null" else differ[1]
        problem = (f"a file diff -r shows on one side only ({part[0]}), without its lines (diff -N writes them)"
                   if only else "a binary file's change without its data (diff -r writes none; git diff --binary does)")
        return FilePart(line, _stripped(name, strip, "b/"), text, problem=problem)
    if part[0].startswith(_COMBINED):
        name = next((_path(said, strip) for said in header if said.startswith("+++ ")), part[0].split(" ", 2)[-1])
        return FilePart(line, name, text, problem=_MERGE)
    if part[0].startswith("*** "):  # the *** Begin Patch form
        name, moved = _path(part[0], strip), path("*** Move to: ")
        if moved and part[0].startswith("*** Update File: "):
            return FilePart(line, moved, text, "move", name)
        action = ("create" if part[0].startswith("*** Add File: ") else
                  "delete" if part[0].startswith("*** Delete File: ") else "edit")
        return FilePart(line, name, text, action, ends=_ends(raw[1:]) if raw and action == "create" else None)
    old, new = (next((_path(said, strip) for said in header if said.startswith(prefix)), None)
                for prefix in ("--- ", "+++ "))
    git = git_path(part[0])
    git = _stripped(git, strip, "b/") if git else None
    binary = any(said.startswith("Binary files ") for said in header)  # a change the diff does not hold
    said_mode = named("new mode ") or named("new file mode ") or ""
    mode = int(said_mode, 8) if re.fullmatch(r"[0-7]{6}", said_mode) else None
    blob, new_blob = next((index.groups()[:2] for said in header if (index := INDEX_LINE.match(said))), (None, None))
    source = None
    if path("rename from ") and path("rename to "):
        action, name, source = "move", path("rename to "), path("rename from ")
    elif path("copy from ") and path("copy to "):
        action, name, source = "copy", path("copy to "), path("copy from ")
    elif named("deleted file mode ") is not None or new == "/dev/null" or _epoch(header, "+++ "):
        action, name = "delete", old if old not in (None, "/dev/null") else git
    elif named("new file mode ") is not None or old == "/dev/null" or _epoch(header, "--- "):
        action, name = "create", new if new not in (None, "/dev/null") else git
    else:
        action, name = "edit", new or git
    modes = {said.split()[-1] for said in header if said.startswith(("new mode ", "old mode ", "new file mode ",
                                                                      "deleted file mode ", "index "))}
    unheld = binary and action != "delete"  # a binary file's deletion checks its blob instead
    link = "120000" in modes
    problem = ("a submodule's change (git's commit of another repository, not a file)" if "160000" in modes else
               "a binary file's change without its data (git diff --binary holds it)" if unheld else "")
    ends = _ends(raw[len(header):]) if raw and action == "create" else None
    return FilePart(line, name, text, action, source, problem, mode, blob, ends, new_blob=new_blob,
                    link=link) if name else None


def _ends(raw: list[str]) -> TextFormat | None:
    """The line ends of the file that the ``+`` lines of a part that creates it make (each line as the diff
    holds it, a CR before its LF kept; the last without an end where ``\\ No newline at end of file``
    follows it), where they are other than LF: CRLF, a lone CR, mixed."""
    made = "".join(said[1:] + ("" if k + 1 < len(raw) and raw[k + 1].startswith("\\") else "\n")
                   for k, said in enumerate(raw) if said.startswith("+"))
    if "\r" not in made:
        return None
    try:
        return decode(made.encode(), "the diff")[1]
    except FastapplyError:
        return None


def _epoch(header: list[str], prefix: str) -> bool:
    """Whether the header's ``--- `` (``+++ ``) line is dated at the epoch: ``diff -N``'s file that is not
    there (so created, or deleted)."""
    return any(line.startswith(prefix) and re.search(r"\t(?:1970-01-01|1969-12-31) ", line) for line in header)


def deleted_text(part: str) -> str | None:
    """The text a part that deletes its file shows the file held (git's hunk of ``-`` lines; "" for an
    empty file), or None where it shows none (``*** Delete File:``)."""
    if part.startswith("*** "):
        return None
    return "".join(line + "\n" for line in _hunk_lines(part, "-"))


def _hunk_lines(part: str, kind: str) -> list[str]:
    """The lines of a part's hunks marked ``kind`` (``-`` deleted, ``+`` added), without the mark."""
    lines = part.split("\n")
    first = next((k for k, line in enumerate(lines) if line.startswith("@@")), len(lines))
    return [line[1:] for line in lines[first:] if line.startswith(kind)]


def link_targets(part: str) -> tuple[str | None, str | None]:
    """The targets a symbolic link's part shows (git writes a link as one line, its target, with no
    newline): before (None: no link) and after (None: deleted).

    >>> link_targets("--- a/l\\n+++ b/l\\n@@ -1 +1 @@\\n-old\\n\\\\ No newline at end of file\\n+new\\n")
    ('old', 'new')
    """
    old, new = _hunk_lines(part, "-"), _hunk_lines(part, "+")
    return (old[0] if len(old) == 1 else None), (new[0] if len(new) == 1 else None)


def git_path(line: str) -> str | None:
    """The file a ``diff --git a/x b/x`` line names (its new path, ``b/x``; quoted, ``"b/x"``, unquoted), or
    None."""
    quoted = re.fullmatch(r'diff --git (?:"(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*")', line)
    if quoted:
        return _unquoted(quoted[1])
    if not line.startswith("diff --git a/"):
        return None
    names = line.removeprefix("diff --git a/")
    halves = [(names[:k], names[k + 3:]) for k in range(len(names)) if names.startswith(" b/", k)]
    same = [b for a, b in halves if a == b]  # a path holding " b/" itself: the split that names one file twice
    return "b/" + (same[0] if same else halves[-1][1]) if halves else None


def part_for(edit: str, path: str) -> str:
    """The part of ``edit`` for the file at ``path`` where ``edit`` is a diff of several files and one of
    them is that file (the diff's path the same as the end of ``path``'s, as ``git diff`` from the
    repository's root names it); else ``edit`` as it is. A usage error where that part moves the file:
    ``fastapply FILE`` edits FILE where it is (``fastapply batch --patch`` moves it)."""
    if not any(mark in edit for mark in ("\n+++ ", "*** Update File: ", "\nrename from ", STARS)) or path == "-":
        return edit
    try:
        parts = split_files(edit)
    except UsageError:
        return edit
    chosen = _chosen(parts, path)
    return chosen.text if chosen is not None and len(parts) > 1 else edit


def part_of(edit: str, path: str) -> FilePart | None:
    """The part of diff ``edit`` for the file at ``path`` (``_chosen``), or None where ``edit`` is not a diff."""
    try:
        return _chosen(split_files(edit), path)
    except UsageError:
        return None


def _chosen(parts: list[FilePart], path: str) -> FilePart | None:
    """Of a diff's parts, the one for the file at ``path``: the only one, or the one whose path (or moved
    file's old path) is the end of ``path``'s; None where there is no such one. A usage error where it
    moves or copies a file to it: ``fastapply FILE`` edits FILE where it is."""
    here = Path(path).resolve().parts
    mine = [part for part in parts if any(name and here[-len(Path(name).parts):] == Path(name).parts
                                          for name in (part.path, part.source if part.action == "move" else None))]
    chosen = mine[0] if len(mine) == 1 else parts[0] if len(parts) == 1 else None
    if chosen is not None and chosen.action in ("move", "copy"):
        does = "moves" if chosen.action == "move" else "copies"
        raise UsageError(f"the diff {does} {chosen.source} to {chosen.path}: fastapply FILE edits FILE where it is; "
                         f"give the diff to fastapply batch --patch")
    return chosen
