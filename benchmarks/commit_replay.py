"""Real commits replayed through ``fastapply batch --patch``: for each commit of a git repository, its
parent's tree, the commit's ``git diff -M --binary`` applied with ``--engine merge --in-place`` (no
model), and the result compared with the commit's own tree: every file's bytes and execute bit, files
created, deleted and renamed included.

    python benchmarks/commit_replay.py REPO                # the 100 latest commits with one parent
    python benchmarks/commit_replay.py REPO --commits 150 --filter RDA --name pallets/click \\
        --out benchmarks/results/commit-replay-click.json
    python benchmarks/commit_replay.py REPO --commits 40 --series 5    # 40 runs of 5 commits in a row
    python benchmarks/commit_replay.py REPO --form diff-c              # GNU diff -rcN of the two trees

``--filter RDA`` takes the commits that rename, delete or add a file (``git log --diff-filter``).
``--reverse`` undoes each instead: its diff applied with ``-R`` to its own tree, against its parent's.
``--series N`` replays runs of N commits in a row instead (each the next one's parent, no merge among
them): their ``git format-patch --stdout -M -C --binary`` mails applied at once with ``--atomic``,
against the last one's tree. ``--form`` writes the diff otherwise: ``log`` as ``git log -p --reverse``
shows the commit (the run), ``diff-u`` and ``diff-c`` as GNU ``diff -ruN`` and ``diff -rcN`` write the two
trees' difference (no modes: execute bits are not compared; a file empty on one side and missing on the
other is not in such a diff, so not compared either). A commit (run) is ``the same`` where the tree left
is the commit's but for the files whose part the batch refused or could not apply (each listed, with
why); ``wrong`` where a file differs that no failed part explains: a defect. Prints a table and writes
JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "commit-replay.json"


def _git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def _export(repo: str, commit: str, where: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(_git(repo, "archive", commit))) as tar:
        tar.extractall(where, filter="tar")


def _tree(root: Path) -> dict[str, tuple[bytes, bool]]:
    return {str(p.relative_to(root)): (os.readlink(p).encode() if p.is_symlink() else p.read_bytes(),
                                       not p.is_symlink() and os.access(p, os.X_OK))
            for p in sorted(root.rglob("*")) if p.is_file() or p.is_symlink()}


FORMS = ("git", "log", "diff-u", "diff-c")


def replay(repo: str, commit: str, parent: str, series: bool = False, reverse: bool = False,
           form: str = "git") -> dict:
    """One commit replayed (``series``: the commits after ``parent`` up to ``commit``, as mails; ``reverse``:
    undone, its diff applied with -R to its own tree against its parent's; ``form``: how the diff is
    written, ``FORMS``): its parts, the failed ones (file, error) and the files wrong."""
    since = f"{parent}..{commit}"
    diff = (_git(repo, "log", "-p", "--reverse", "-M", "-C", "--binary", since) if form == "log" else
            _git(repo, "format-patch", "--stdout", "-M", "-C", "--binary", since) if series else
            _git(repo, "diff", "-M", "--binary", parent, commit) if form == "git" else b"")
    with tempfile.TemporaryDirectory() as tmp:
        before, after, patch = Path(tmp, "before"), Path(tmp, "after"), Path(tmp, "commit.diff")
        before.mkdir()
        after.mkdir()
        _export(repo, commit if reverse else parent, before)
        _export(repo, parent if reverse else commit, after)
        if form.startswith("diff-"):  # the parent's tree against the commit's, as GNU diff -r writes it
            sides = ["after", "before"] if reverse else ["before", "after"]
            diff = subprocess.run(["diff", f"-r{form[-1]}N", *sides], cwd=tmp, capture_output=True).stdout
        patch.write_bytes(diff)
        started = time.perf_counter()
        # -P: the fastapply this script runs with, not one the tree holds (fastapply's own commits)
        command = [sys.executable, "-P", "-m", "fastapply", "batch", "--patch", str(patch), "--engine", "merge",
                   "--in-place", *(["--atomic"] if series else []), *(["-R"] if reverse else [])]
        run = subprocess.run(command, cwd=before, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        records = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        got, want = _tree(before), _tree(after)
    failed = [(r["file"], r["error"]) for r in records if not r["ok"]]
    refused = {name for name, _ in failed}
    if form.startswith("diff-"):  # GNU diff writes no modes, nor a file empty on one side and missing on the other
        got, want = ({name: (data, False) for name, (data, _) in tree.items()} for tree in (got, want))
        unsaid = {name for name in set(got) ^ set(want) if (got.get(name) or want.get(name))[0] == b""}
        got, want = ({name: kept for name, kept in tree.items() if name not in unsaid} for tree in (got, want))
    differ = sorted(name for name in set(got) | set(want) if got.get(name) != want.get(name))
    wrong = [name for name in differ if name not in refused and not _moved_from(name, diff, refused)]
    did = Counter(kind for r in records if r["ok"] for kind, key in _DID if r.get(key))
    return {"commit": commit, "since": parent, "parts": len(records), "did": dict(did), "failed": failed,
            "wrong": wrong, "seconds": round(seconds, 2), "exit": run.returncode}


# what a part did, as its record says it
_DID = (("created", "created"), ("deleted", "deleted"), ("moved", "moved_from"), ("copied", "copied_from"),
        ("binary", "binary"))


def _moved_from(name: str, diff: bytes, refused: set[str]) -> bool:
    """Whether ``name`` is the old path of a rename whose part failed (the old file then stays)."""
    lines = diff.decode("utf-8", "replace").splitlines()
    return any(line == f"rename from {name}" and i + 1 < len(lines) and lines[i + 1].removeprefix("rename to ")
               in refused for i, line in enumerate(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", help="a git repository (a bare one too)")
    parser.add_argument("--commits", type=int, default=100, help="the latest N commits with one parent")
    parser.add_argument("--filter", default="", help="git log --diff-filter letters, e.g. RDA")
    parser.add_argument("--series", type=int, default=0, help="replay runs of N commits in a row as one series "
                                                               "of mails, with --atomic")
    parser.add_argument("--reverse", action="store_true", help="undo each commit (or run): its diff applied "
                                                                    "with -R to its tree, against its parent's")
    parser.add_argument("--form", choices=FORMS, default="git", help="the diff as git diff (a series: "
                        "format-patch) writes it, as git log -p --reverse, or as GNU diff -ruN / -rcN of the trees")
    parser.add_argument("--name", help="what the JSON calls the repository (default: its path)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.series and args.form.startswith("diff-"):
        parser.error("--series takes --form git or log: GNU diff writes no commits")
    if args.series:  # runs of commits in a row (each the next one's parent), no merge among them, none twice
        log = ["log", "--format=%H %P", f"-n{args.commits * args.series * 20}"]
        lines = _git(args.repo, *log, "HEAD").decode().splitlines()
        parents = {commit: rest for commit, *rest in map(str.split, lines)}
        used: set[str] = set()
        commits = []
        for last in parents:
            run = [last]
            while len(run) <= args.series and len(parents.get(run[-1], ())) == 1:
                run.append(parents[run[-1]][0])
            if len(run) == args.series + 1 and not used & set(run) and len(commits) < args.commits:
                used |= set(run[:-1])
                commits.append([last, run[-1]])
    else:
        log = ["log", "--no-merges", "--format=%H %P", f"-n{args.commits}", "-M"]
        log += [f"--diff-filter={args.filter}"] if args.filter else []
        commits = [line.split() for line in _git(args.repo, *log, "HEAD").decode().splitlines()]
    rows = []
    for number, (commit, *parents) in enumerate(commits, 1):
        if len(parents) != 1:
            continue
        rows.append(replay(args.repo, commit, parents[0], bool(args.series), args.reverse, args.form))
        if rows[-1]["wrong"]:
            print(f"wrong: {commit[:10]} {rows[-1]['wrong'][:5]}", flush=True)
        print(f"\r{number}/{len(commits)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    why = Counter(error.split(":")[0] if "binary" not in error else "a binary file's change"
                  for row in rows for _, error in row["failed"])
    summary = {"commits": len(rows), "same": sum(not row["wrong"] for row in rows),
               "wrong": sum(bool(row["wrong"]) for row in rows), "parts": sum(row["parts"] for row in rows),
               "failed parts": sum(len(row["failed"]) for row in rows), "why failed": dict(why.most_common()),
               "did": dict(sum((Counter(row["did"]) for row in rows), Counter()))}
    print("| commits | the commit's tree | a file wrong | parts | parts failed |\n|---:|---:|---:|---:|---:|")
    print(f"| {summary['commits']} | {summary['same']} | {summary['wrong']} | {summary['parts']:,} | "
          f"{summary['failed parts']} |")
    for reason, count in why.most_common():
        print(f"  failed: {count} x {reason}")
    print("  parts: " + ", ".join(f"{summary['did'].get(kind, 0)} {kind}" for kind, _ in _DID))
    head = _git(args.repo, "rev-parse", "HEAD").decode().strip()
    fastapply = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
                               capture_output=True, text=True).stdout.strip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"repo": args.name or args.repo, "head": head, "filter": args.filter,
                                    "series": args.series, "reverse": args.reverse, "form": args.form,
                                    "fastapply": fastapply,
                                    "machine": platform.platform(), "summary": summary, "rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
