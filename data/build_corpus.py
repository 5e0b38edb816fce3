"""Build a corpus of permissively licensed source code from the installed Python packages: the files
that `data.build_train --corpus` turns into synthetic apply examples.

Commands (from the repository root)::

    python -m data.build_corpus --out runs/corpus                       # every installed distribution + stdlib
    python -m data.build_corpus --out runs/corpus --max-bytes 100000000  # the first 100 MB of it
    python -m data.build_corpus --out runs/c --path /some/site-packages --no-stdlib

Sources: every distribution of the running interpreter (or of the ``--path`` folders), read through the
file list in its ``RECORD``, and the Python standard library (``python-stdlib``, PSF-2.0). A distribution
is kept when its licence metadata (``License-Expression``, then ``License``, then trove classifiers, as
``data.licenses.pypi_license`` reads them) is permissive, and when it is not an eval-suite package
(``data/eval_packages.json``; vendored copies of those, ``pip/_vendor/requests/...``, are left out too).
Files: the languages ``fastapply.syntax`` knows; 200 bytes to 200 kB; UTF-8 text (newlines made LF);
hand-written by ``data.edits.text_skip_reason`` (no line over 400 characters, no "generated" or
"DO NOT EDIT" header, no compiled output; a C++ header named ``.h`` is kept, as C++); each text once
(sha1 with trailing whitespace stripped per line; the first in package-then-path order keeps it). An
OR licence expression is permissive when any alternative is, an AND one when every term is.

Outputs (in --out)
  corpus-00000.jsonl.gz, ...   ~64 MB of text each, one file a line: {"text", "path", "package",
                               "version", "license", "language"}, sorted by package then path
  manifest.json                totals, by language, by licence, per package, skipped counts by reason

This module and the project modules it imports use the standard library only (tests check), so it runs
under any Python 3.11+ with no fastapply dependencies; ``iter_records`` / ``iter_texts`` read a corpus
back for training. It does not tokenize.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import re
import sysconfig
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path, PurePosixPath

from data.edits import text_skip_reason
from data.licenses import pypi_license
from fastapply.errors import FastapplyError
from fastapply.fileio import decode
from fastapply.syntax import SOURCE_LANGUAGES, language_for_path
from fastapply.tasks import dump_tasks

ROOT = Path(__file__).resolve().parent.parent
STDLIB = "python-stdlib"
SHARD_BYTES = 64 * 2**20  # text per shard, before gzip
MIN_BYTES, MAX_BYTES = 200, 200_000
VENDOR_DIRS = frozenset({"_vendor", "vendor", "vendored", "_vendored", "extern", "_extern", "_vendored_packages"})
NOT_PERMISSIVE = re.compile(r"GPL|General Public|MPL|Mozilla|EPL|Eclipse|CDDL|EUPL|Affero|SSPL|Commons Clause",
                            re.IGNORECASE)


@dataclass(frozen=True)
class Package:
    name: str  # normalized (PEP 503), or "python-stdlib"
    version: str
    license: str  # SPDX expression, permissive
    files: tuple[tuple[str, Path], ...]  # (path inside the package's site folder, file on disk), by path


def normalize(name: str) -> str:
    """PEP 503 name: ``Foo_Bar.baz`` -> ``foo-bar-baz``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def eval_package_names(path: Path) -> frozenset[str]:
    """Normalized names of every package in the eval suite's pinned pairs (PyPI and npm alike)."""
    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    return frozenset(normalize(pair["package"]) for pair in pairs)


def license_of(metadata) -> tuple[str | None, str | None]:
    """(permissive SPDX expression, None) or (None, why the distribution is skipped) from its metadata."""
    info = {"license_expression": metadata.get("License-Expression"), "license": metadata.get("License"),
            "classifiers": metadata.get_all("Classifier") or []}
    expression = pypi_license(info)
    if expression:
        return expression, None
    stated = [v for v in (info["license_expression"], info["license"])
              if v and v.strip().upper() not in ("", "UNKNOWN")]
    stated += [c for c in info["classifiers"] if c.startswith("License ::") and c != "License :: OSI Approved"]
    if not stated:
        return None, "no licence metadata"
    if NOT_PERMISSIVE.search(" ".join(stated)):
        return None, "licence not permissive"
    return None, "licence not recognised"


def _vendored_eval_package(path: str, eval_names: frozenset[str]) -> bool:
    parts = PurePosixPath(path).parts
    return any(part in VENDOR_DIRS and normalize(PurePosixPath(name).stem) in eval_names
               for part, name in zip(parts, parts[1:]))


def installed_packages(paths: list[str] | None, eval_names: frozenset[str]) -> tuple[list[Package], dict]:
    """The permissive, non-eval distributions on ``paths`` (default ``sys.path``), first of each name, and
    the names of those skipped, by reason."""
    found: dict[str, Package] = {}
    skipped: dict[str, list[str]] = {}
    for dist in distributions(**({"path": paths} if paths is not None else {})):
        name = normalize(dist.metadata["Name"] or "")
        if not name or name in found or any(name in names for names in skipped.values()):
            continue
        expression, reason = license_of(dist.metadata)
        if name in eval_names:
            reason = "eval-suite package"
        elif reason is None and dist.files is None:
            reason = "no RECORD"
        if reason:
            skipped.setdefault(reason, []).append(name)
            continue
        files = sorted((str(f), Path(dist.locate_file(f))) for f in dist.files
                       if f.parts[0] != ".." and language_for_path(str(f), SOURCE_LANGUAGES))
        found[name] = Package(name, dist.metadata["Version"], expression, tuple(files))
    return sorted(found.values(), key=lambda p: p.name), {k: sorted(v) for k, v in sorted(skipped.items())}


def stdlib_package() -> Package:
    """The running interpreter's standard library (without its site-packages)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        for file_name in names:
            path = Path(folder, file_name)
            if language_for_path(file_name, SOURCE_LANGUAGES):
                files.append((path.relative_to(root).as_posix(), path))
    return Package(STDLIB, platform.python_version(), "PSF-2.0", tuple(sorted(files)))


def read_source(path: str, file: Path) -> tuple[str, str] | str:
    """(LF text, language) for a file the corpus keeps, else why not. A C++ header named ``.h`` is kept
    as C++."""
    try:
        data = file.read_bytes()
    except OSError:
        return "missing"
    if len(data) < MIN_BYTES:
        return "under 200 bytes"
    if len(data) > MAX_BYTES:
        return "over 200 kB"
    try:
        text, _ = decode(data, path)
    except FastapplyError:
        return "binary or not UTF-8"
    reason = text_skip_reason(path, text)
    if reason == "C++ header named .h":
        return text, "cpp"
    return reason or (text, language_for_path(path, SOURCE_LANGUAGES))


def text_key(text: str) -> str:
    """The dedup key: sha1 of the text with trailing whitespace stripped from every line."""
    return hashlib.sha1("\n".join(line.rstrip() for line in text.split("\n")).encode("utf-8")).hexdigest()


def _records(packages: Iterable[Package], eval_names: frozenset[str], max_bytes: int | None,
             skipped: Counter) -> Iterator[dict]:
    seen: set[str] = set()
    total = 0
    for package in sorted(packages, key=lambda p: p.name):
        for path, file in package.files:
            if max_bytes is not None and total >= max_bytes:
                return
            kept = "vendored eval-suite package" if _vendored_eval_package(path, eval_names) else \
                read_source(path, file)
            if isinstance(kept, str):
                skipped[kept] += 1
                continue
            text, language = kept
            key = text_key(text)
            if key in seen:
                skipped["duplicate"] += 1
                continue
            seen.add(key)
            total += len(text.encode("utf-8"))
            yield {"text": text, "path": path, "package": package.name, "version": package.version,
                   "license": package.license, "language": language}


def write_corpus(packages: Iterable[Package], out: Path, eval_names: frozenset[str] = frozenset(),
                 max_bytes: int | None = None, shard_bytes: int = SHARD_BYTES) -> dict:
    """Write the shards and ``manifest.json`` into ``out``; returns the manifest (file counts and skips)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("corpus-*.jsonl.gz"):
        old.unlink()
    skipped: Counter[str] = Counter()
    by_language: dict[str, Counter] = {}
    by_license: dict[str, Counter] = {}
    per_package: dict[str, dict] = {}
    shards, shard, size = [], [], 0

    def flush() -> None:
        name = f"corpus-{len(shards):05d}.jsonl.gz"
        dump_tasks(out / name, shard)
        shards.append(name)

    for record in _records(packages, eval_names, max_bytes, skipped):
        n_bytes = len(record["text"].encode("utf-8"))
        for table, key in ((by_language, record["language"]), (by_license, record["license"])):
            table.setdefault(key, Counter()).update(files=1, bytes=n_bytes)
        entry = per_package.setdefault(record["package"], {"version": record["version"], "license": record["license"],
                                                           "files": 0, "bytes": 0})
        entry["files"] += 1
        entry["bytes"] += n_bytes
        shard.append(record)
        size += n_bytes
        if size >= shard_bytes:
            flush()
            shard, size = [], 0
    if shard:
        flush()
    return {
        "python": platform.python_version(),
        "files": sum(p["files"] for p in per_package.values()),
        "bytes": sum(p["bytes"] for p in per_package.values()),
        "shards": shards,
        "by_language": _sorted_table(by_language),
        "by_license": _sorted_table(by_license),
        "packages": per_package,
        "skipped_files": dict(sorted(skipped.items())),
    }


def _sorted_table(table: dict[str, Counter]) -> dict[str, dict]:
    return {key: dict(counts) for key, counts in sorted(table.items(), key=lambda kv: -kv[1]["bytes"])}


def build_corpus(out: Path, paths: list[str] | None = None, stdlib: bool = True, max_bytes: int | None = None,
                 eval_pairs: Path = ROOT / "data" / "eval_packages.json") -> dict:
    """The whole build: sources, filters, shards, ``manifest.json``; returns the manifest."""
    eval_names = eval_package_names(eval_pairs)
    packages, skipped_packages = installed_packages(paths, eval_names)
    if stdlib:
        packages.append(stdlib_package())
    manifest = write_corpus(packages, out, eval_names, max_bytes)
    manifest["skipped_packages"] = skipped_packages
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def iter_records(directory: str | Path) -> Iterator[dict]:
    """Every record of a corpus, in its order (package, then path)."""
    for shard in sorted(Path(directory).glob("corpus-*.jsonl.gz")):
        with gzip.open(shard, "rt", encoding="utf-8") as handle:
            for line in handle:
                yield json.loads(line)


def iter_texts(directory: str | Path) -> Iterator[str]:
    """Every file text of a corpus, in its order: what a tokenizer or a language-model trainer reads."""
    return (record["text"] for record in iter_records(directory))


def summary(manifest: dict, seconds: float) -> str:
    """One screen: totals, top languages and licences, skip reasons."""
    lines = [f"{manifest['files']:,} files, {manifest['bytes'] / 1e6:.1f} MB of text in {len(manifest['shards'])} "
             f"shard(s), {len(manifest['packages'])} packages, Python {manifest['python']}, {seconds:.0f} s"]
    for title in ("by_language", "by_license"):
        lines.append(title.replace("_", " ") + ":")
        for key, row in list(manifest[title].items())[:8]:
            key = key if len(key) <= 32 else key[:29] + "..."
            lines.append(f"  {key:32} {row['files']:>7,} files {row['bytes'] / 1e6:>8.1f} MB")
    lines.append("skipped files: " + ", ".join(f"{k} {v:,}" for k, v in manifest["skipped_files"].items()))
    for reason, names in manifest.get("skipped_packages", {}).items():
        more = " ..." if len(names) > 12 else ""
        lines.append(f"skipped packages, {reason} ({len(names)}): " + " ".join(names[:12]) + more)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "corpus")
    parser.add_argument("--max-bytes", type=int, default=None, help="stop adding files once this much text is in")
    parser.add_argument("--path", action="append", default=None, help="a site folder to read instead of sys.path")
    parser.add_argument("--no-stdlib", action="store_true", help="leave the standard library out")
    parser.add_argument("--eval-pairs", type=Path, default=ROOT / "data" / "eval_packages.json")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    manifest = build_corpus(args.out, args.path, not args.no_stdlib, args.max_bytes, args.eval_pairs)
    print(summary(manifest, time.perf_counter() - start))


if __name__ == "__main__":
    main()
