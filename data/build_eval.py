"""Build the eval suite: 450 apply tasks from real edits between consecutive releases of packages.

Inputs
  data/packages.json        candidate package names (section "eval"), by registry
  data/eval_packages.json   the pinned release pairs (archive URLs and digests) the suite is built from
Outputs
  evals/tasks/suite.jsonl.gz     the tasks, DESIGN.md §9 schema (read with ``fastapply.tasks.load_tasks``)
  evals/tasks/manifest.jsonl     per task: package, registry, versions, path, licence, archives, style
  evals/tasks/counts.json        counts by language, size bucket and package

Commands (from the repository root)::

    python -m data.build_eval discover   # registries -> data/eval_packages.json (only to re-pin)
    python -m data.build_eval build      # pinned pairs -> evals/tasks/ (downloads into data/.cache/)

``build`` is reproducible: the pinned archives are checked by digest, candidates are ordered
deterministically and drawn with ``--seed`` (default 0), and each task's snippet style (marker wording,
context lines) comes from a generator seeded by the seed and the task id.

Selection: every changed file that ``data.edits`` accepts is a candidate; exact duplicates and a second
edit of the same file in the same package are dropped; at most ``per_package`` tasks per package;
quotas per language group (python, JS/TS, other) and, within each, equal thirds over the size
buckets (<=100, 101-250, 251-400 lines), relaxed in that order when a cell runs dry.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from data.archives import read_sources
from data.edits import FileEdit, changed_lines, find_edits
from data.releases import ReleasePair, discover_pairs, fetch
from data.styles import snippet_for
from fastapply.errors import FastapplyError
from fastapply.tasks import dump_tasks

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "data" / ".cache"
BUCKETS = (100, 250, 400)  # upper bounds of the size buckets, in lines


def language_group(language: str) -> str:
    if language == "python":
        return "python"
    if language in ("javascript", "typescript", "tsx"):
        return "jsts"
    return "other"


def size_bucket(lines: int) -> str:
    """``"<=100"``, ``"101-250"`` or ``"251-400"`` (from ``BUCKETS``)."""
    low = 0
    for high in BUCKETS:
        if lines <= high:
            return f"<={high}" if low == 0 else f"{low + 1}-{high}"
        low = high
    return f">{BUCKETS[-1]}"


@dataclass(frozen=True)
class SuiteSpec:
    total: int = 450
    # Tasks wanted per language group; a group that runs dry leaves its share to the others.
    targets: tuple[tuple[str, int], ...] = (("python", 240), ("jsts", 135), ("other", 75))
    per_package: int = 8  # cap per package, so the suite is diverse
    max_lines: int = 400
    max_hunks: int = 4
    min_shares: tuple[tuple[str, float], ...] = (("python", 0.5), ("jsts", 0.25))  # checked on the result


@dataclass(frozen=True)
class Candidate:
    pair: ReleasePair
    edit: FileEdit
    task_id: str = field(default="")


def task_id(pair: ReleasePair, path: str) -> str:
    """A readable id that is also a safe file name: ``pypi-markupsafe-3.0.3-src-markupsafe-__init__.py``."""
    raw = f"{pair.ecosystem}-{pair.package}-{pair.new.version}-{path}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", raw.replace("@", "")).strip("-")


def candidates(pair: ReleasePair, old_tree: dict[str, str], new_tree: dict[str, str],
               spec: SuiteSpec) -> list[Candidate]:
    edits = find_edits(old_tree, new_tree, spec.max_lines, spec.max_hunks, (pair.old.version, pair.new.version))
    return [Candidate(pair, edit, task_id(pair, edit.path)) for edit in edits]


def _content_keys(c: Candidate) -> set[str]:
    """Keys under which two candidates count as duplicates: the same file content before and after, or
    (within one package) the same changed lines, as when one change ships in two copies of a file."""
    removed, added = changed_lines(c.edit.original, c.edit.expected)
    change = "\n".join(line.strip() for line in removed) + "\0" + "\n".join(line.strip() for line in added)
    return {hashlib.sha256((c.edit.original + "\0" + c.edit.expected).encode()).hexdigest(),
            hashlib.sha256((c.pair.name + "\0" + change).encode()).hexdigest()}


def select(pool: Iterable[Candidate], spec: SuiteSpec, seed: int) -> list[Candidate]:
    """``spec.total`` candidates drawn with ``seed``: quotas by language group and size bucket, a cap
    per package, no duplicate content and no file twice per package."""
    ordered = sorted(pool, key=lambda c: c.task_id)
    random.Random(seed).shuffle(ordered)
    targets = dict(spec.targets)
    chosen: list[Candidate] = []
    taken_ids: set[str] = set()
    contents: set[str] = set()
    files: set[tuple[str, str]] = set()
    per_package: Counter[str] = Counter()

    def fits(c: Candidate) -> bool:
        return (c.task_id not in taken_ids and not contents & _content_keys(c)
                and (c.pair.name, c.edit.path) not in files and per_package[c.pair.name] < spec.per_package)

    def take(c: Candidate) -> None:
        chosen.append(c)
        taken_ids.add(c.task_id)
        contents.update(_content_keys(c))
        files.add((c.pair.name, c.edit.path))
        per_package[c.pair.name] += 1

    def count(group: str, bucket: str | None = None) -> int:
        return sum(1 for c in chosen if language_group(c.edit.language) == group
                   and (bucket is None or size_bucket(c.edit.lines) == bucket))

    buckets = [size_bucket(b) for b in BUCKETS]
    cell_quota = {(g, b): n // len(buckets) + (i < n % len(buckets))
                  for g, n in targets.items() for i, b in enumerate(buckets)}
    # Pass 1: group and bucket quotas; pass 2: group quotas; pass 3: anything, until the total is reached.
    for stage in ("cell", "group", "any"):
        for c in ordered:
            if len(chosen) >= spec.total:
                break
            group, bucket = language_group(c.edit.language), size_bucket(c.edit.lines)
            if not fits(c):
                continue
            if stage == "cell" and count(group, bucket) >= cell_quota.get((group, bucket), 0):
                continue
            if stage == "group" and count(group) >= targets.get(group, 0):
                continue
            take(c)
    if len(chosen) < spec.total:
        raise FastapplyError(f"only {len(chosen)} tasks available for a suite of {spec.total}; pin more pairs")
    for group, share in spec.min_shares:
        if count(group) < share * spec.total:
            raise FastapplyError(f"{group}: {count(group)} tasks, fewer than {share:.0%} of {spec.total}")
    return sorted(chosen, key=lambda c: c.task_id)


def make_task(c: Candidate, seed: int) -> tuple[dict, dict] | None:
    """(task record, manifest record) for a chosen candidate, or None when no snippet style fits."""
    rng = random.Random(f"{seed}/{c.task_id}")
    snippet = snippet_for(c.edit.original, c.edit.expected, c.edit.language, rng)
    if snippet is None:
        return None
    source = {"package": c.pair.name, "from": c.pair.old.version, "to": c.pair.new.version, "license": c.pair.license}
    task = {"id": c.task_id, "language": c.edit.language, "path": c.edit.path, "original": c.edit.original,
            "update": snippet.text, "instruction": "", "expected": c.edit.expected, "source": source}
    manifest = {"id": c.task_id, "ecosystem": c.pair.ecosystem, "package": c.pair.package,
                "from": c.pair.old.version, "to": c.pair.new.version, "path": c.edit.path,
                "license": c.pair.license, "language": c.edit.language,
                "lines": c.edit.lines, "bucket": size_bucket(c.edit.lines), "hunks": c.edit.hunks,
                "marker": snippet.marker, "context": snippet.context,
                "from_url": c.pair.old.url, "from_digest": c.pair.old.digest,
                "to_url": c.pair.new.url, "to_digest": c.pair.new.digest}
    return task, manifest


def build_suite(trees: Iterable[tuple[ReleasePair, dict[str, str], dict[str, str]]], spec: SuiteSpec,
                seed: int) -> tuple[list[dict], list[dict]]:
    """Tasks and manifest records from (pair, old tree, new tree) triples: no network here."""
    pool = [c for pair, old, new in trees for c in candidates(pair, old, new, spec)]
    made = [m for m in (make_task(c, seed) for c in pool) if m is not None]
    usable = {task["id"] for task, _ in made}
    usable_pool = [c for c in pool if c.task_id in usable]
    print(f"  {len(usable_pool)} candidate edits: "
          + ", ".join(f"{k}={v}" for k, v in sorted(Counter(
              (language_group(c.edit.language), size_bucket(c.edit.lines)) for c in usable_pool).items())),
          file=sys.stderr)
    chosen = select(usable_pool, spec, seed)
    by_id = {task["id"]: (task, manifest) for task, manifest in made}
    tasks = [by_id[c.task_id][0] for c in chosen]
    manifest = [by_id[c.task_id][1] for c in chosen]
    return tasks, manifest


def counts(manifest: list[dict]) -> dict:
    return {
        "tasks": len(manifest),
        "packages": len({(m["ecosystem"], m["package"]) for m in manifest}),
        "by_language": dict(sorted(Counter(m["language"] for m in manifest).items())),
        "by_group": dict(sorted(Counter(language_group(m["language"]) for m in manifest).items())),
        "by_bucket": dict(sorted(Counter(m["bucket"] for m in manifest).items())),
        "by_ecosystem": dict(sorted(Counter(m["ecosystem"] for m in manifest).items())),
        "by_hunks": dict(sorted(Counter(str(m["hunks"]) for m in manifest).items())),
        "by_license": dict(sorted(Counter(m["license"] for m in manifest).items())),
    }


def write_suite(out_dir: Path, tasks: list[dict], manifest: list[dict]) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    dump_tasks(out_dir / "suite.jsonl.gz", tasks)
    (out_dir / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest), encoding="utf-8")
    summary = counts(manifest)
    (out_dir / "counts.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def load_pairs(path: Path) -> list[ReleasePair]:
    return [ReleasePair.from_json(record) for record in json.loads(path.read_text(encoding="utf-8"))["pairs"]]


def fetched_trees(pairs: list[ReleasePair], cache: Path, workers: int = 8):
    """(pair, old tree, new tree) for each pair, downloading archives into ``cache`` as needed."""
    releases = list(dict.fromkeys(release for pair in pairs for release in (pair.old, pair.new)))
    with ThreadPoolExecutor(workers) as pool:
        paths = dict(zip(releases, pool.map(lambda release: fetch(release, cache), releases)))
    for number, pair in enumerate(pairs, start=1):
        if number % 100 == 0:
            print(f"  {number}/{len(pairs)} pairs read", file=sys.stderr)
        yield pair, read_sources(paths[pair.old]), read_sources(paths[pair.new])


def discover(names: dict[str, list[str]], pairs_per_package: int, workers: int = 8) -> list[ReleasePair]:
    """Pinned release pairs for the named packages (registry -> names); unlicensed ones are skipped."""
    jobs = [(eco, name) for eco, listed in names.items() for name in listed]

    def one(job):
        try:
            return discover_pairs(job[0], job[1], pairs_per_package)
        except OSError as exc:
            print(f"  skip {job[0]}/{job[1]}: {exc}", file=sys.stderr)
            return []

    with ThreadPoolExecutor(workers) as pool:
        found = list(pool.map(one, jobs))
    for (eco, name), pairs in zip(jobs, found):
        if not pairs:
            print(f"  no usable pairs: {eco}/{name} (licence not permissive or no archives)", file=sys.stderr)
    return [pair for pairs in found for pair in pairs]


def stratified_subset(tasks: list, share: float, seed: int = 0) -> list:
    """``share`` of ``tasks`` drawn within each (language group, size bucket) cell, so the subset keeps
    the suite's mix; suite order kept. For a model too slow to run on all 450 (a CPU)."""
    import random

    cells: dict[tuple[str, str], list] = {}
    for task in tasks:
        cells.setdefault((language_group(task.language), size_bucket(len(task.original.splitlines()))), []).append(task)
    chosen = set()
    for key in sorted(cells):
        members = sorted(cells[key], key=lambda t: t.id)
        random.Random(f"{seed}/{key}").shuffle(members)
        chosen.update(t.id for t in members[: max(1, round(len(members) * share))])
    return [t for t in tasks if t.id in chosen]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("discover", help="query the registries and pin release pairs")
    d.add_argument("--names", type=Path, default=ROOT / "data" / "packages.json")
    d.add_argument("--section", default="eval")
    d.add_argument("--pairs-per-package", type=int, default=3)
    d.add_argument("--out", type=Path, default=ROOT / "data" / "eval_packages.json")
    b = sub.add_parser("build", help="build the suite from the pinned pairs")
    b.add_argument("--pairs", type=Path, default=ROOT / "data" / "eval_packages.json")
    b.add_argument("--out", type=Path, default=ROOT / "evals" / "tasks")
    b.add_argument("--cache", type=Path, default=CACHE)
    b.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("subset", help="a stratified subset of the suite (language group x size bucket)")
    s.add_argument("--tasks", type=Path, default=ROOT / "evals" / "tasks" / "suite.jsonl.gz")
    s.add_argument("--share", type=float, default=0.34)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--max-lines", type=int, default=None, help="only tasks whose original has at most this many lines")
    s.add_argument("--out", type=Path, default=ROOT / "evals" / "tasks" / "stratified.jsonl.gz")
    args = parser.parse_args(argv)
    if args.command == "subset":
        from fastapply.tasks import dump_tasks, load_tasks

        tasks = [t for t in load_tasks(args.tasks)
                 if args.max_lines is None or len(t.original.splitlines()) <= args.max_lines]
        chosen = stratified_subset(tasks, args.share, args.seed)
        dump_tasks(args.out, chosen)
        print(f"{len(chosen)} tasks -> {args.out}", file=sys.stderr)
        return
    if args.command == "discover":
        names = json.loads(args.names.read_text(encoding="utf-8"))[args.section]
        pairs = discover(names, args.pairs_per_package)
        args.out.write_text(json.dumps({"pairs": [p.to_json() for p in pairs]}, indent=1) + "\n", encoding="utf-8")
        print(f"{len(pairs)} pairs of {len({p.name for p in pairs})} packages -> {args.out}", file=sys.stderr)
        return
    pairs = load_pairs(args.pairs)
    tasks, manifest = build_suite(fetched_trees(pairs, args.cache), SuiteSpec(), args.seed)
    summary = write_suite(args.out, tasks, manifest)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
