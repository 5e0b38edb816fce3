"""A git repository of random commits for ``commit_replay.py`` to replay where real ones are scarce:
symbolic links made (to files, to folders, dangling, out of the tree, in new folders), pointed
elsewhere, deleted and renamed beside files edited, made and renamed.

    python benchmarks/link_repo.py /tmp/links 1 --commits 60
    python benchmarks/commit_replay.py /tmp/links --commits 60 --name links-seed1 --out /tmp/links.json
    python benchmarks/commit_replay.py /tmp/links --commits 10 --series 5 --name links-seed1 --out /tmp/s.json

The same seed makes the same commits (but their ids, which hold the time).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
from pathlib import Path


def _git(root: Path, *args: str, check: bool = True) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=check,
                   capture_output=True)


def _paths(root: Path, links: bool) -> list[Path]:
    """The files (``links``: the symbolic links) of the work tree, in a steady order."""
    return sorted(p for p in root.rglob("*") if ".git" not in p.parts and p.is_symlink() == links
                  and (links or p.is_file()))


def _change(root: Path, rng: random.Random, n: int) -> None:
    """One random change of the work tree."""
    files, links, kind = _paths(root, False), _paths(root, True), rng.random()
    if kind < .25:  # a new link
        folder = rng.choice([root, root / "src", root / "docs" / f"d{rng.randint(0, 3)}"])
        folder.mkdir(parents=True, exist_ok=True)
        name = folder / f"l{rng.randint(0, 99)}"
        if not os.path.lexists(name):
            name.symlink_to(rng.choice([os.path.relpath(rng.choice(files), folder) if files else "x", "../outside",
                                        "missing", os.path.relpath(root / "src", folder)]))
    elif kind < .4 and links:  # a link pointed elsewhere
        link = rng.choice(links)
        link.unlink()
        link.symlink_to(f"t{rng.randint(0, 9)}")
    elif kind < .5 and links:  # a link deleted
        rng.choice(links).unlink()
    elif kind < .75 and files:  # a file edited
        file = rng.choice(files)
        file.write_text(file.read_text() + f"y = {rng.randint(0, 9)}\n")
    elif kind < .85:  # a file made
        (root / "src" / f"f{rng.randint(0, 99)}.py").write_text(f"z = {n}\n")
    elif files or links:  # a file or a link renamed
        path, to = rng.choice(files + links), root / "src" / f"r{rng.randint(0, 99)}"
        if not os.path.lexists(to):
            path.rename(to)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="where to make the repository (replaced)")
    parser.add_argument("seed", type=int)
    parser.add_argument("--commits", type=int, default=60)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    shutil.rmtree(args.root, ignore_errors=True)
    (args.root / "src").mkdir(parents=True)
    _git(args.root, "init", "-q")
    (args.root / "src" / "a.py").write_text("x = 1\n")
    (args.root / "README").write_text("hi\n")
    _git(args.root, "add", "-A")
    _git(args.root, "commit", "-qm", "start")
    for n in range(args.commits):
        for _ in range(rng.randint(1, 4)):
            _change(args.root, rng, n)
        _git(args.root, "add", "-A")
        _git(args.root, "commit", "-qm", f"change {n}", check=False)  # nothing changed: no commit
    print(f"made {args.root}")


if __name__ == "__main__":
    main()
