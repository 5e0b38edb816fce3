"""A diff of several files split into each file's part, with what it does to the file: edits it, creates,
deletes or moves it, copies another, or changes it in a way that cannot be applied (a binary file's change
without its data, a submodule's). It reads ``git diff`` and ``git show``, ``git log -p`` and the mails
``git format-patch`` writes (a series of commits, each part in its commit), ``diff -ru``, svn's, CVS's
and hg's diffs and the ``*** Begin Patch`` form; ``fastapply batch --patch`` applies each part to its file,
and ``fastapply FILE`` takes FILE's part of a diff of several files (``part_for``). ``diffs.py`` reads each
part's hunks.

>>> diff = "--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-a\\n+b\\n--- /dev/null\\n+++ b/y.py\\n@@ -0,0 +1 @@\\n+c\\n"
>>> [(part.path, part.action) for part in split_files(diff)]
[('x.py', 'edit'), ('y.py', 'create')]
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from pathlib import Path

from fastapply.contextdiff import STARS, as_unified
from fastapply.diffs import (COMBINED, COMMIT_LINE, DIFF_COMMAND, HEADERS, HUNK_HEADER, INDEX_LINE, MERGE, RULE,
                             SVN_INDEX, made_by_tool, named_path, stripped, unmailed, unquoted)
from fastapply.errors import FastapplyError, UsageError
from fastapply.fileio import TextFormat, decode

_ONLY_IN = re.compile(r"^Only in (.+): (.+)$")  # diff -r's file on one side alone (without -N: no lines of it)
_DIFFER = re.compile(r"^(?:Binary files|Files) (.+) and (.+) differ$")  # diff -r's binary file, git's without --binary
_STARTS = ("diff --git ", "*** Update File: ", "*** Add File: ", "*** Delete File: ") + COMBINED  # a part starts


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
    lines = unmailed(code).split("\n")
    starts: list[int] = []
    owed = None  # a tool's numbered hunk's lines still to come (old, new): none of them starts a part
    for i, line in enumerate(lines):
        if owed is not None and (line[:1] in (" ", "-", "+", "\\") or not line):
            if not line.startswith("\\"):
                owed = (owed[0] - (line[:1] != "+"), owed[1] - (line[:1] != "-"))
            owed = owed if owed[0] > 0 or owed[1] > 0 else None
            continue
        owed = None
        if (numbered := HUNK_HEADER.match(line)) and starts and made_by_tool(lines[starts[-1]]):
            owed = (int(numbered.group(2) or 1), int(numbered.group(4) or 1))
            owed = owed if owed[0] > 0 or owed[1] > 0 else None
        after = lines[i + 1] if i + 1 < len(lines) else ""
        pair = line.startswith("--- ") and after.startswith("+++ ")
        alone = _ONLY_IN.match(line) or (_DIFFER.match(line) and not (i and lines[i - 1].startswith(HEADERS)))
        preamble = ((DIFF_COMMAND.match(line) and after.startswith("--- "))
                    or (SVN_INDEX.match(line) and RULE.match(after)))
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
    names = [(named_path(old, 0), named_path(new, 0)) for old, new in zip(lines, lines[1:])
             if old.startswith("--- ") and new.startswith("+++ ")]
    names += [(differ[1], differ[2]) for line in lines if (differ := _DIFFER.match(line))]  # diff -r's binary files
    pairs = [(old.split("/", 1), new.split("/", 1)) for old, new in names if "/dev/null" not in (old, new)]
    same = all(len(old) == len(new) == 2 and old[0] != new[0] and old[1] == new[1] for old, new in pairs)
    return 1 if pairs and same else None


def _file_part(line: int, part: list[str], raw: list[str] | None, strip: int | None) -> FilePart | None:
    """The part of a diff that starts on ``line``, read from its header (the lines before its first hunk);
    ``raw``: its lines with the CRs they end in, where known; ``strip`` as ``split_files``'s."""
    text = "\n".join(part).strip("\n") + "\n"
    header = part[:next((k for k, said in enumerate(part) if said.startswith("@@")), len(part))]
    plain = strip and strip - 1  # the -p of a path written without git's a/ or b/ (rename from, *** lines)

    def named(prefix: str) -> str | None:  # what a header line says (a mode; a path: ``path``)
        return next((unquoted(said[len(prefix):].strip()) for said in header if said.startswith(prefix)), None)

    def path(prefix: str) -> str | None:
        return None if (name := named(prefix)) is None else stripped(name, plain)

    if (only := _ONLY_IN.match(part[0])) or (differ := _DIFFER.match(part[0])):
        name = f"{only[1].rstrip('/')}/{only[2]}" if only else differ[2] if differ[2] != "/dev/null" else differ[1]
        problem = (f"a file diff -r shows on one side only ({part[0]}), without its lines (diff -N writes them)"
                   if only else "a binary file's change without its data (diff -r writes none; git diff --binary does)")
        return FilePart(line, stripped(name, strip, "b/"), text, problem=problem)
    if part[0].startswith(COMBINED):
        name = next((named_path(said, strip) for said in header if said.startswith("+++ ")), part[0].split(" ", 2)[-1])
        return FilePart(line, name, text, problem=MERGE)
    if part[0].startswith("*** "):  # the *** Begin Patch form
        name, moved = named_path(part[0], strip), path("*** Move to: ")
        if moved and part[0].startswith("*** Update File: "):
            return FilePart(line, moved, text, "move", name)
        action = ("create" if part[0].startswith("*** Add File: ") else
                  "delete" if part[0].startswith("*** Delete File: ") else "edit")
        return FilePart(line, name, text, action, ends=_ends(raw[1:]) if raw and action == "create" else None)
    old, new = (next((named_path(said, strip) for said in header if said.startswith(prefix)), None)
                for prefix in ("--- ", "+++ "))
    git = git_path(part[0])
    git = stripped(git, strip, "b/") if git else None
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
        return unquoted(quoted[1])
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
