"""Reading one file's edit written as a diff: a unified diff (``git diff``, ``diff -u``, the ``@@`` hunks
chat models write, the ``*** Begin Patch`` form of coding agents) or SEARCH/REPLACE blocks (aider's,
Cline's, Roo Code's), or the mail ``git format-patch`` writes. ``patch.py`` places what is read here in
the file; a diff of several files is split into each file's part first (``fileparts.py``).

>>> patch = read_patch("@@ -1,2 +1,2 @@\\n a = 1\\n-b = 2\\n+b = 3\\n")
>>> patch.hunks[0].old, patch.hunks[0].new
(['a = 1', 'b = 2'], ['a = 1', 'b = 3'])
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from fastapply.contextdiff import STARS, as_unified, holds_context_hunk
from fastapply.errors import UsageError

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SEARCH = re.compile(r"^(?:<{5,9}|-{5,9}) ?SEARCH\s*$")  # aider's <<<<<<< SEARCH, Cline's ------- SEARCH
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^(?:>{5,9}|\+{5,9}) ?REPLACE\s*$")
_LINE_HINT = re.compile(r"^:(start|end)_line:\s*(\d+)\s*$")  # Roo Code's, then a ------- line
_SEPARATOR = re.compile(r"^-{5,9}\s*$")
# A commit's first line: of the mail git format-patch writes, or of git log -p's and git show's text
COMMIT_LINE = re.compile(r"From [0-9a-f]{40} |commit [0-9a-f]{40}(?:[0-9a-f]{24})?(?: \(.+\))?$")
DIFF_COMMAND = re.compile(r"^diff (?:--?[A-Za-z][^ ]* )+\S")  # the line diff -ru (hg diff) writes before a part
SVN_INDEX = re.compile(r"^Index: \S")  # svn diff's (and CVS's) line before a part, a rule of = after it
RULE = re.compile(r"^={20,}$")
_CVS = ("RCS file: ", "retrieving revision ")  # CVS's lines between the rule and its diff command
INDEX_LINE = re.compile(r"^index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})(?: [0-7]{6})?\s*$")  # git's object ids
HEADERS = ("diff --git ", "index ", "--- ", "+++ ", "old mode ", "new mode ", "similarity index ", "rename from ",
            "rename to ", "copy from ", "copy to ", "new file mode ", "*** Begin Patch", "*** End Patch",
            "*** End of File", "*** Update File: ", "*** Move to: ")
_DELETES = ("*** Delete File: ", "deleted file mode ", "+++ /dev/null")
COMBINED = ("diff --cc ", "diff --combined ")  # git's diff of a merge against its parents (git show MERGE)
MERGE = ("a merge commit's combined diff (diff --cc), whose @@@ hunks show the merge against each of its parents "
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
    edit = unmailed(edit.replace("\r\n", "\n"))
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


def unmailed(text: str) -> str:
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
        elif line.startswith(("diff --git ",) + COMBINED):
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
    exact = any(made_by_tool(line) for line in lines[:first])  # its hunks' counts are to be kept to
    while i < len(lines):
        line = lines[i]
        if line.startswith(COMBINED + ("@@@ ",)):
            raise UsageError(f"the diff is {MERGE}")
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
            files.add(named_path(line))
            end = next((j for j in range(i + 1, len(lines)) if not lines[j].startswith("+")), len(lines))
            hunks.append(Hunk(tuple(("+", new[1:]) for new in lines[i + 1:end]), 0, 1))
            creates, i = True, end
        elif line.strip() == "*** End of File" and hunks:
            hunks[-1] = replace(hunks[-1], at_end=True)
            i += 1
        elif line.startswith(("+++ ", "*** Update File: ")):
            files.add(named_path(line))
            i += 1
        elif (line.startswith(HEADERS + _CVS) or DIFF_COMMAND.match(line) or SVN_INDEX.match(line)
              or RULE.match(line) or not line.strip()):
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


def named_path(line: str, strip: int | None = None) -> str:
    """The file a ``+++ b/path``, ``--- a/path`` or ``*** Update File: path`` line names (its quotes taken
    off; ``strip`` as ``fileparts.split_files``'s)."""
    if line.startswith("*** "):
        return stripped(line.split(": ", 1)[-1].strip(), strip and strip - 1)
    return stripped(unquoted(line[4:].split("\t")[0].strip()), strip, "a/" if line.startswith("--- ") else "b/")


def stripped(name: str, strip: int | None, side: str = "") -> str:
    """A path as a diff names it without its first ``strip`` folders (``-p``); None: without git's ``a/``
    or ``b/`` (``side``) where it has it."""
    if strip is None or name == "/dev/null":
        return name.removeprefix(side) if side else name
    folders = name.split("/")
    if strip >= len(folders):
        raise UsageError(f"cannot take {strip} folder(s) off the diff's path {name} (-p {strip})")
    return "/".join(folders[strip:])


_ESCAPED = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13}


def unquoted(name: str) -> str:
    r"""A path as git quotes one that holds other than printable ASCII (``"a/utf-8 \355\225\234.txt"``:
    C escapes, octal bytes of its UTF-8), unquoted; any other as it is.

    >>> unquoted(r'"b/caf\303\251 \"menu\".txt"')
    'b/café "menu".txt'
    """
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    return re.sub(rb"\\([0-7]{3}|.)", lambda m: bytes([int(m[1], 8)]) if len(m[1]) == 3 else
                  bytes([_ESCAPED.get(m[1], m[1][0])]), name[1:-1].encode()).decode("utf-8", "replace")


def made_by_tool(line: str) -> bool:
    """Whether a part's header line is one a tool writes (git's ``diff --git``, ``diff -r``'s or hg's
    command line, svn's ``Index:``): its hunks' counts are right."""
    return line.startswith("diff --git ") or bool(DIFF_COMMAND.match(line) or SVN_INDEX.match(line))


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
