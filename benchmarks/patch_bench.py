"""Edits written as diffs, on every committed edit with a known answer: how often ``patch.py`` places
a diff itself (certain) and whether what it writes is the known answer.

    python benchmarks/patch_bench.py       # the suite and data/train: benchmarks/results/patch.json

Each task's change (original -> expected) is written as tools and chat models write it: ``git -U3``
(difflib's unified diff, 3 lines of context, exact line numbers), ``-U0`` (no context), ``@@ no
numbers`` (the -U3 hunks with bare ``@@`` headers, as chat models write them), ``search/replace``
(each -U3 hunk's old and new lines as a SEARCH/REPLACE block), ``diff -c`` (difflib's context diff of
3 lines: ``*** 1,5 ****`` / ``--- 1,6 ----`` hunks, as ``diff -c`` writes them), ``stale context``
(the -U3 diff with the first non-blank context line of each hunk altered; the known answer keeps the
file's line), ``hunks indented more`` and ``hunks dedented`` (the -U3 diff with each hunk's lines 4
spaces further in, or with the indentation they all share taken off, where they share some), ``git
-U0, index`` (``git diff --no-index -U0`` run on the two files: no context, with git's ``index
OLD..NEW`` line naming both) and ``@@ function line`` (git's -U3 diff with each header's numbers
dropped and the function line git writes after them kept); the last two are left out where git is
not installed. Written as a coding agent's edit tool calls: ``edit calls``, ``edit calls, changed
lines``, ``edit calls, stale`` and ``edit calls, spacing`` (``calls``).
Each is read and merged as ``fastapply FILE --edit-file`` does it (``engine.read_edit``, ``merge_reading``).
Reported per form: the edits, certain, certain and exact, exact among the rest (the merge of the
snippet it amounts to, or a line-number placement left likely), refused (a usage error: an old string
found more than once), and the median time. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapply.engine import merge_reading, read_edit  # noqa: E402
from fastapply.errors import UsageError  # noqa: E402
from fastapply.tasks import load_tasks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "patch.json"
KNOWN = ["evals/tasks/suite.jsonl.gz", "data/train/train.jsonl.gz", "data/train/valid.jsonl.gz"]


def unified(old: str, new: str, context: int, form=difflib.unified_diff) -> str:
    """The diff as git writes it (``form``: ``difflib.context_diff``, as ``diff -c`` writes it): a line with
    no newline (the file's last) is followed by git's mark."""
    lines = form(old.splitlines(True), new.splitlines(True), "a/file", "b/file", n=context)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def git_diff(old: str, new: str, folder: Path, context: int) -> str:
    """``git diff --no-index -U<context>`` of the two texts, written as files in ``folder``."""
    (folder / "a").write_bytes(old.encode())
    (folder / "b").write_bytes(new.encode())
    return subprocess.run(["git", "diff", "--no-index", f"-U{context}", "a", "b"], cwd=folder, capture_output=True,
                          check=False).stdout.decode()


def git_forms(old: str, new: str, folder: Path) -> dict[str, str]:
    """git's own diffs: -U0 as it writes it, and -U3 with each header's numbers dropped and the function
    line git writes after them kept (``@@ def f(x):``, as the ``*** Begin Patch`` form names a scope)."""
    body = git_diff(old, new, folder, 3).split("\n@@", 1)
    named = re.sub(r"(?m)^@@ [^\n]*? @@ ?", "@@ ", "@@" + body[1]) if len(body) == 2 else ""
    return {"git -U0, index": git_diff(old, new, folder, 0), "@@ function line": named}


def forms(old: str, new: str, folder: Path | None) -> dict[str, str]:
    diff = unified(old, new, 3)
    hunks = re.split(r"(?m)^@@[^\n]*\n", diff)[1:]
    blocks = []
    for hunk in hunks:
        lines = hunk.splitlines()
        search = [line[1:] for line in lines if line[:1] in (" ", "-")]
        replace = [line[1:] for line in lines if line[:1] in (" ", "+")]
        blocks.append("<<<<<<< SEARCH\n" + "".join(f"{line}\n" for line in search) + "=======\n"
                      + "".join(f"{line}\n" for line in replace) + ">>>>>>> REPLACE\n")
    return {"git -U3": diff, "-U0": unified(old, new, 0),
            **calls(hunks),
            "@@ no numbers": re.sub(r"(?m)^@@ [^\n]*@@", "@@", diff.split("\n", 2)[2]),
            "search/replace": "".join(blocks), "stale context": stale(diff),
            "diff -c": unified(old, new, 3, difflib.context_diff),
            **{name: edit for name, edit in (("hunks indented more", reindented(diff, False)),
                                             ("hunks dedented", reindented(diff, True))) if edit is not None},
            **(git_forms(old, new, folder) if folder is not None else {})}


def calls(hunks: list[str]) -> dict[str, str]:
    """The -U3 hunks as a coding agent's edit calls (one MultiEdit, its edits in order): ``edit calls``
    (each hunk's old lines for old_string, its new lines for new_string), ``edit calls, changed lines``
    (the lines from a hunk's first change to its last, or from the context line above a hunk that only
    adds; lines deleted alone with their newline: an old string found more than once is refused, as the
    tool refuses it), ``edit calls, stale`` (the first non-blank
    context line altered in old_string, as an agent quoting a line it misremembers: the tool finds no
    such string)."""
    whole, changed, misquoted = [], [], []
    for hunk in hunks:
        lines = [line for line in hunk.split("\n") if line[:1] in (" ", "-", "+")]
        old = [line[1:] for line in lines if line[0] != "+"]
        new = [line[1:] for line in lines if line[0] != "-"]
        whole.append({"old_string": "\n".join(old), "new_string": "\n".join(new)})
        first = next((i for i, line in enumerate(lines) if line[0] != " "), 0)
        last = max(i for i, line in enumerate(lines) if line[0] != " ")
        if any(line[0] == "-" for line in lines):
            span = lines[first:last + 1]
        else:
            span = lines[max(first - 1, 0):last + 1]
        cut, put = [line[1:] for line in span if line[0] != "+"], [line[1:] for line in span if line[0] != "-"]
        ends = "" if put else "\n"  # lines deleted alone: with their newline, as an agent deletes them
        changed.append({"old_string": "\n".join(cut) + ends, "new_string": "\n".join(put)})
        altered = next((i for i, line in enumerate(old) if line.strip() and i < len(old) - 1
                        and lines[[k for k, one in enumerate(lines) if one[0] != "+"][i]][0] == " "), None)
        if altered is not None:
            quoted = old[:altered] + [old[altered] + "  # was"] + old[altered + 1:]
            misquoted.append({"old_string": "\n".join(quoted), "new_string": "\n".join(new)})
        else:
            misquoted.append(whole[-1])
    respaced = [{**edit, "old_string": edit["old_string"].replace(", ", ",")} for edit in whole]
    return {form: json.dumps({"file_path": "file", "edits": edits}) for form, edits in
            (("edit calls", whole), ("edit calls, changed lines", changed), ("edit calls, stale", misquoted),
             ("edit calls, spacing", respaced))}


def reindented(diff: str, dedent: bool) -> str | None:
    """The -U3 diff with each hunk's lines (but a hunk of new lines alone) indented 4 spaces more, or
    with the indentation they all share taken off (None where no hunk has any), as a chat model quotes
    a method without its class's indentation: the answer keeps the file's indentation."""
    out, changed = [], False
    for piece in re.split(r"(?m)^(?=@@)", diff):
        lines = piece.split("\n")
        body = [i for i, line in enumerate(lines[1:], 1) if line[:1] in (" ", "-", "+") and line[1:].strip()]
        if not piece.startswith("@@") or not any(lines[i][:1] != "+" for i in body):
            out.append(piece)
            continue
        share = min(len(lines[i][1:]) - len(lines[i][1:].lstrip()) for i in body)
        lead = lines[body[0]][1:1 + share]
        if dedent and (not share or any(not lines[i][1:].startswith(lead) for i in body)):
            out.append(piece)
            continue
        for i in body:
            lines[i] = lines[i][0] + (lines[i][1 + share:] if dedent else "    " + lines[i][1:])
        out.append("\n".join(lines))
        changed = True
    return "".join(out) if changed else None


def stale(diff: str) -> str:
    """The -U3 diff with one context line of each hunk (its first non-blank one) altered, as in a diff
    written against an older file or by a chat model that misremembers a line: the answer must keep the
    file's own line."""
    lines, seen = diff.split("\n"), False
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            seen = False
        elif line.startswith(" ") and line.strip() and not seen and not line.startswith("---"):
            lines[i], seen = line + "  # was", True
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", default=KNOWN, help="task files (eval-suite schema)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) if shutil.which("git") else None
        for path in args.tasks:
            for task in load_tasks(path):
                if task.original == task.expected or "\r" in task.original + task.expected:
                    continue
                for form, edit in forms(task.original, task.expected, folder).items():
                    start = time.perf_counter()
                    try:
                        result = merge_reading(task.original, read_edit(task.original, edit, task.language),
                                               task.language)
                    except UsageError:
                        result = None
                    rows.append({"task": f"{path}:{task.id}", "form": form, "refused": result is None,
                                 "confidence": result and result.confidence,
                                 "exact": result is not None and result.text == task.expected,
                                 "seconds": time.perf_counter() - start})
    report = {"command": "python benchmarks/patch_bench.py " + " ".join(args.tasks), "forms": {}}
    print("| form | edits | certain | certain and exact | exact, not certain | refused | median ms |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for form in dict.fromkeys(r["form"] for r in rows):
        mine = [r for r in rows if r["form"] == form]
        certain = [r for r in mine if r["confidence"] == "certain"]
        figures = {"edits": len(mine), "certain": len(certain), "certain_exact": sum(r["exact"] for r in certain),
                   "exact_not_certain": sum(r["exact"] for r in mine if r["confidence"] != "certain"),
                   "refused": sum(r["refused"] for r in mine),
                   "median_ms": round(1000 * statistics.median(r["seconds"] for r in mine), 2),
                   "certain_wrong": [r["task"] for r in certain if not r["exact"]]}
        report["forms"][form] = figures
        print(f"| {form} | {figures['edits']:,} | {figures['certain']:,} | {figures['certain_exact']:,} | "
              f"{figures['exact_not_certain']:,} | {figures['refused']:,} | {figures['median_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
