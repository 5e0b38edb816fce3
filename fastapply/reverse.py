"""A diff turned around: the diff that undoes it (``fastapply batch --patch -R``, as ``git apply -R``).

Each file's part is turned around where it stands: its ``---`` and ``+++`` paths, git's ``diff --git``
paths, ``index`` ids, ``rename from`` / ``rename to`` and modes swapped, a created file deleted and a
deleted one created, each hunk's ``-`` and ``+`` lines and its header's ranges swapped, a binary patch's
two hunks (the change and its reverse) swapped; the commits of a series (mails, ``git log -p``), last
first. A copy is undone by deleting the copy where git's ``index`` line names it. A ``*** Begin Patch``
file added is deleted where it holds the lines added; one deleted cannot be made again (its lines are not
in the diff): a usage error, as is a diff not read whole (a chat model's answer: give its diff alone).
"""

from __future__ import annotations


from fastapply.contextdiff import as_unified
from fastapply.diffs import COMMIT_LINE, HUNK_HEADER, INDEX_LINE, signs
from fastapply.errors import UsageError
from fastapply.fileparts import git_path, split_files

_SWAPS = (("new file mode ", "deleted file mode "), ("old mode ", "new mode "), ("rename from ", "rename to "))


def reversed_diff(diff: str) -> str:
    """The diff that undoes ``diff`` (its line ends kept).

    >>> print(reversed_diff("--- a/x.py\\n+++ b/x.py\\n@@ -1,2 +1,2 @@\\n a\\n-b\\n+c\\n"), end="")
    --- a/x.py
    +++ b/x.py
    @@ -1,2 +1,2 @@
     a
    -c
    +b
    """
    from fastapply.answer import code_of

    diff = as_unified(diff)  # a context diff turned around as the unified diff it amounts to
    if code_of(diff.replace("\r\n", "\n")) != diff.replace("\r\n", "\n"):
        raise UsageError("-R turns a diff around, not a chat model's answer: give it the diff alone")
    lines = diff.split("\n")
    end = len(_unblank(lines))  # the blank lines the text ends with stay at its end
    commits = [k for k, line in enumerate(lines[:end]) if COMMIT_LINE.match(line)] or [0]
    chunks = [_turned(lines[start:stop]) for start, stop in zip(commits, commits[1:] + [end])]
    gap = next((len(chunk) - len(_unblank(chunk)) for chunk in chunks[:-1]), 0)  # between one commit and the next
    turned = [line for chunk in reversed(chunks) for line in _unblank(chunk) + [""] * gap][:-gap or None]
    return "\n".join(lines[:commits[0]] + turned + lines[end:])


def _unblank(lines: list[str]) -> list[str]:
    """``lines`` without the blank lines they end with."""
    end = len(lines)
    while end and not lines[end - 1]:
        end -= 1
    return lines[:end]


def _turned(lines: list[str]) -> list[str]:
    """One diff's lines (one commit's), each file's part turned around (a mail's signature, ``-- `` and git's
    version, kept out of its last hunk)."""
    commit = COMMIT_LINE.match(lines[0])
    signed = next((k for k in range(len(lines)) if signs(lines, k)), len(lines)) if commit else len(lines)
    starts = sorted({part.line - 1 for part in split_files("\n".join(lines))} | {signed})
    out = lines[:starts[0]]
    for start, end in zip(starts, starts[1:]):
        out += _turned_part(lines[start:end])
    return out + lines[signed:]


def _turned_part(part: list[str]) -> list[str]:
    """One file's part turned around."""
    bare = [line.removesuffix("\r") for line in part]
    if bare[0].startswith("*** "):
        return _turned_agent(part, bare)
    if any(line.startswith("copy from ") for line in bare):
        return _copy_undone(bare)
    out: list[str] = []
    k = 0
    while k < len(part):
        line, said = part[k], bare[k]
        end = line[len(said):]  # its CR, if any
        if said.startswith("--- ") and k + 1 < len(part) and bare[k + 1].startswith("+++ "):
            out += ["--- " + _side(bare[k + 1][4:], "a/") + end, "+++ " + _side(said[4:], "b/") + end]
            k += 2
            continue
        if said == "GIT binary patch":
            forward, rest = _blocks(part[k + 1:])
            backward, tail = _blocks(rest)
            return out + [line] + backward + forward + tail
        if said.startswith("@@"):
            hunk, k = _hunk(part, bare, k)
            out += hunk
            continue
        out.append(_header(said) + end)
        k += 1
    return out


def _header(said: str) -> str:
    """A header line turned around."""
    for one, other in _SWAPS:
        if said.startswith(one):
            return other + said[len(one):]
        if said.startswith(other):
            return one + said[len(other):]
    if (index := INDEX_LINE.match(said)):
        return said.replace(f"{index.group(1)}..{index.group(2)}", f"{index.group(2)}..{index.group(1)}", 1)
    if said.startswith("diff --git "):
        new = git_path(said)
        old = said[len("diff --git "):len(said) - len(new) - 1] if new and said.endswith(" " + new) else None
        return f"diff --git {_side(new, 'a/')} {_side(old, 'b/')}" if old else said
    return said


def _side(name: str, prefix: str) -> str:
    """A path of a ``---``, ``+++`` or ``diff --git`` line with git's side letter made ``prefix``'s."""
    tab = name.find("\t")
    path, rest = (name[:tab], name[tab:]) if tab >= 0 else (name, "")
    quoted = path.startswith('"')
    core = path[1:] if quoted else path
    if core[:2] in ("a/", "b/"):
        core = prefix + core[2:]
    return ('"' + core if quoted else core) + rest


def _hunk(part: list[str], bare: list[str], k: int) -> tuple[list[str], int]:
    """The hunk whose header is ``part[k]`` turned around, and the index after it: its ranges swapped and
    its ``-`` and ``+`` lines; a numbered hunk runs as far as its counts, a bare one while its lines are
    a hunk's."""
    numbered = HUNK_HEADER.match(bare[k])
    if numbered:
        old, new = (numbered.group(g) + ("," + numbered.group(g + 1) if numbered.group(g + 1) else "") for g in (1, 3))
        out = [f"@@ -{new} +{old} @@{bare[k][numbered.end():]}" + part[k][len(bare[k]):]]
    else:
        out = [part[k]]
    wanted = [int(numbered.group(g) or 1) for g in (2, 4)] if numbered else None
    k += 1
    while k < len(part):
        said = bare[k]
        counted = wanted is None or (wanted[0] <= 0 and wanted[1] <= 0)  # past its counts: chat models miscount
        if said.startswith("@@") or (said[:1] not in ("-", "+", " ", "\\") and said):
            break
        if counted and said.startswith("--- ") and k + 1 < len(part) and bare[k + 1].startswith("+++ "):
            break
        kind = said[:1]
        out.append({"-": "+", "+": "-"}.get(kind, kind) + part[k][1:] if kind in ("-", "+") else part[k])
        if wanted is not None and kind != "\\":
            if kind in ("-", " ", ""):
                wanted[0] -= 1
            if kind in ("+", " ", ""):
                wanted[1] -= 1
        k += 1
    return out[:1] + _deletions_first(out[1:]), k


def _deletions_first(lines: list[str]) -> list[str]:
    """A hunk's lines with each run of changed lines' ``-`` lines before its ``+`` lines, as git writes them
    (a ``\\ No newline at end of file`` line staying after its own): the last such mark of a hunk is the
    new file's. Turned around, a change of a last line that has no newline on either side put its ``+``
    line first, so the old file's mark came last and the file was written with a newline."""
    units: list[list[str]] = []
    for line in lines:
        if line.startswith("\\") and units:
            units[-1].append(line)
        else:
            units.append([line])
    out: list[str] = []
    run: list[list[str]] = []
    for unit in units + [[" "]]:  # a kept line ends the last run
        if unit[0][:1] in ("-", "+"):
            run.append(unit)
            continue
        out += [line for kind in "-+" for each in run if each[0][0] == kind for line in each]
        run = []
        out += unit
    return out[:-1]


def _blocks(lines: list[str]) -> tuple[list[str], list[str]]:
    """A binary patch's first hunk (its lines and the blank line that ends it), and the lines after."""
    blank = next((k for k, line in enumerate(lines) if not line.strip()), None)
    return (lines + [""], []) if blank is None else (lines[:blank + 1], lines[blank + 1:])


def _copy_undone(bare: list[str]) -> list[str]:
    """A copy turned around: the copy deleted, where git's ``index`` line names it."""
    index = next((found for line in bare if (found := INDEX_LINE.match(line))), None)
    copy = next(line[len("copy to "):] for line in bare if line.startswith("copy to "))
    if index is None:
        raise UsageError(f"-R cannot undo the copy to {copy}: the diff has no index line naming the copy")
    quoted = copy.startswith('"')
    name = f'"a/{copy[1:]}' if quoted else f"a/{copy}"
    other = f'"b/{copy[1:]}' if quoted else f"b/{copy}"
    return [f"diff --git {name} {other}", "deleted file mode 100644", f"index {index.group(2)}..0000000"]


def _turned_agent(part: list[str], bare: list[str]) -> list[str]:
    """A ``*** Begin Patch`` file's part turned around."""
    if bare[0].startswith("*** Delete File: "):
        raise UsageError(f"-R cannot make {bare[0][len('*** Delete File: '):]} again: the diff deleted it "
                         f"without its lines")
    if bare[0].startswith("*** Add File: "):
        name = bare[0][len("*** Add File: "):]
        added = [line[1:] for line in part[1:] if line.startswith("+")]
        rest = [line for line in part[1:] if not line.startswith("+")]
        return ([f"--- a/{name}", "+++ /dev/null", f"@@ -1,{len(added)} +0,0 @@"] + ["-" + line for line in added]
                + rest)
    out = []
    moved = next((line[len("*** Move to: "):] for line in bare if line.startswith("*** Move to: ")), None)
    for line, said in zip(part, bare):
        if moved and said.startswith("*** Update File: "):
            out.append(f"*** Update File: {moved}")
        elif moved and said.startswith("*** Move to: "):
            out.append(f"*** Move to: {bare[0][len('*** Update File: '):]}")
        elif said[:1] in ("-", "+") and not said.startswith(("*** ", "--- ", "+++ ")):
            out.append({"-": "+", "+": "-"}[said[0]] + line[1:])
        else:
            out.append(line)
    return out
