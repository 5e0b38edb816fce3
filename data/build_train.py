"""Build a training set for apply models: real release edits mixed 1:4 with synthetic edits, or
synthetic edits only from a pretraining corpus (``--corpus``).

Inputs
  data/train_packages.json   pinned release pairs of the training packages (``packages.json``, section
                             "train"); none of them may be an eval-suite package (checked)
  data/eval_packages.json    the eval suite's pinned pairs, for that check
  --corpus DIR               instead of release pairs: a corpus built by ``data.build_corpus`` (no network)
Outputs (in --out)
  train.jsonl.gz, valid.jsonl.gz   one example a line: id, language, path, original, update,
                                   instruction, expected, source {package, from, to, license, kind,
                                   transform}; the eval-task fields, so ``fastapply.tasks.load_tasks``
                                   reads them and ``fastapply.prompt`` presets turn them into
                                   prompt and answer for any tokenizer's chat template
  counts.json                      the counts after every step (also printed)

Commands (from the repository root)::

    python -m data.build_eval discover --section train --pairs-per-package 2 --out data/train_packages.json
    python -m data.build_train --out runs/train-data                       # the full set (git-ignored)
    python -m data.build_train --out data/train --max-examples 2000        # the committed sample
    python -m data.build_corpus --out runs/corpus
    python -m data.build_train --corpus runs/corpus --out runs/train-corpus --max-examples 30000

Steps: real edits are the changed files of each pair that the eval's filters accept
(``data.edits``); synthetic edits come from program transformations (``data.transforms``,
``data.transforms_python``) of the files of each package's newest release, a few per file. Then:
no-op examples dropped, exact duplicates dropped, examples of files under ``short_lines`` lines kept
with probability ``short_keep``, at most ``per_name`` examples per file name, real and synthetic mixed
1:4 (``--mix``; ``1:0`` keeps every real edit and no synthetic one), packages split into train and
validation. Every random choice is seeded by ``--seed`` and the example, so the same inputs give the
same files. With ``--corpus`` each corpus package is one tree
(``source.package``, ``from`` = ``to`` = its version, ``license`` from the corpus), its examples are
all synthetic and the mix step is replaced by the ``--max-examples`` cap.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path, PurePosixPath

from data.build_corpus import eval_package_names, iter_records, normalize
from data.build_eval import CACHE, ROOT, fetched_trees, load_pairs
from data.edits import build_output, find_edits, path_skip_reason, text_skip_reason
from data.releases import ReleasePair
from data.styles import has_free_marker, snippet_for
from data.transforms import TRANSFORMS as TREE_TRANSFORMS
from data.transforms_python import TRANSFORMS as PYTHON_TRANSFORMS
from fastapply.errors import FastapplyError
from fastapply.syntax import SOURCE_LANGUAGES, count_errors, language_for_path
from fastapply.tasks import dump_tasks

TRANSFORMS = TREE_TRANSFORMS | PYTHON_TRANSFORMS


@dataclass(frozen=True)
class TrainSpec:
    real_per_synthetic: tuple[int, int] | None = (1, 4)  # the mix, real : synthetic; None: synthetic only
    short_lines: int = 100  # files under this many lines are down-sampled...
    short_keep: float = 0.25  # ...to this share of their examples
    per_name: int = 12  # examples per file name (``__init__.py``, ``index.js`` would crowd the rest out)
    max_lines: int = 400
    max_hunks: int = 4
    transforms_per_file: int = 2
    transforms: tuple[str, ...] = ()  # the transformations to draw from; empty: all of them
    valid_share: float = 0.1  # share of packages held out for validation
    max_examples: int | None = None  # a smaller set, keeping the mix (if there is one)


@dataclass(frozen=True)
class Origin:
    """Where an example's file comes from: the unit of the train/valid split and the record's source."""
    name: str  # "pypi/requests", "npm/@scope/pkg" for release pairs; the package name for corpus files
    version_from: str
    version_to: str
    license: str  # SPDX expression, permissive

    @classmethod
    def of_pair(cls, pair: ReleasePair) -> "Origin":
        return cls(pair.name, pair.old.version, pair.new.version, pair.license)


@dataclass(frozen=True)
class Example:
    id: str
    kind: str  # "real" or "synthetic"
    transform: str  # "release" for real edits, else the transformation's name
    origin: Origin
    path: str
    language: str
    original: str
    expected: str
    instruction: str

    @property
    def lines(self) -> int:
        return max(len(self.original.splitlines()), len(self.expected.splitlines()))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("@", "")).strip("-")


def _fraction(key: str) -> float:
    """A number in [0, 1) fixed by ``key``: seeded draws that do not depend on processing order."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) / 16 ** 12


def real_examples(pair: ReleasePair, old: dict[str, str], new: dict[str, str], spec: TrainSpec) -> list[Example]:
    edits = find_edits(old, new, spec.max_lines, spec.max_hunks, (pair.old.version, pair.new.version))
    return [Example(_slug(f"real-{pair.ecosystem}-{pair.package}-{pair.new.version}-{e.path}"), "real", "release",
                    Origin.of_pair(pair), e.path, e.language, e.original, e.expected, "") for e in edits]


def synthetic_examples(origin: Origin, tree: dict[str, str], spec: TrainSpec, seed: int) -> list[Example]:
    """Up to ``transforms_per_file`` transformations of each hand-written source file in ``tree`` (the
    files of ``origin`` at ``origin.version_to``)."""
    out = []
    for path in sorted(tree):
        text, language = tree[path], language_for_path(path, SOURCE_LANGUAGES)
        n_lines = len(text.splitlines())
        if (language is None or not 5 <= n_lines <= spec.max_lines or path_skip_reason(path)
                or text_skip_reason(path, text) or build_output(path, tree) or count_errors(text, language)):
            continue
        rng = random.Random(f"{seed}/{origin.name}/{path}")
        names = sorted(spec.transforms or TRANSFORMS)
        rng.shuffle(names)
        made = 0
        for name in names:
            if made == spec.transforms_per_file:
                break
            edit = TRANSFORMS[name](text, language, rng)
            if edit is None:
                continue
            made += 1
            out.append(Example(_slug(f"syn-{origin.name}-{origin.version_to}-{path}-{name}"),
                               "synthetic", name, origin, path, language, edit.original, edit.expected,
                               edit.instruction))
    return out


def _cap_names(examples: list[Example], per_name: int) -> list[Example]:
    seen: Counter[str] = Counter()
    kept = []
    for example in examples:
        name = PurePosixPath(example.path).name
        if seen[name] < per_name:
            seen[name] += 1
            kept.append(example)
    return kept


def select(real: list[Example], synthetic: list[Example], spec: TrainSpec, seed: int) -> tuple[list[Example], dict]:
    """The filtering and mixing steps, in order; returns the kept examples and the count after each step.
    With ``spec.real_per_synthetic`` None there is no mix: the first ``max_examples`` are kept."""
    pool = sorted(real + synthetic, key=lambda e: e.id)
    random.Random(seed).shuffle(pool)
    stages = {"candidates": _kinds(pool)}
    pool = [e for e in pool if e.original != e.expected and has_free_marker(e.expected, e.language)]
    stages["after_no_op_removal"] = _kinds(pool)
    seen: set[str] = set()
    unique = []
    for e in pool:
        key = hashlib.sha256(f"{e.original}\0{e.expected}".encode()).hexdigest()
        if key not in seen:
            seen.add(key)
            unique.append(e)
    pool = unique
    stages["after_dedup"] = _kinds(pool)
    pool = [e for e in pool if e.lines >= spec.short_lines or _fraction(f"{seed}/short/{e.id}") < spec.short_keep]
    stages["after_short_downsampling"] = _kinds(pool)
    pool = _cap_names(pool, spec.per_name)
    stages["after_name_cap"] = _kinds(pool)
    if spec.real_per_synthetic is None:  # a synthetic-only set: no mix, only the cap
        pool = pool[: spec.max_examples]
        stages["after_cap"] = _kinds(pool)
        return pool, stages
    real_part, synthetic_part = spec.real_per_synthetic
    kept_real = [e for e in pool if e.kind == "real"]
    kept_synthetic = [e for e in pool if e.kind == "synthetic"]
    units = len(kept_real) // real_part
    if synthetic_part:  # 1:0 keeps every real edit and no synthetic one
        units = min(units, len(kept_synthetic) // synthetic_part)
    if spec.max_examples is not None:
        units = min(units, spec.max_examples // (real_part + synthetic_part))
    chosen = set(e.id for e in kept_real[: units * real_part]) | set(e.id for e in kept_synthetic[: units * synthetic_part])
    pool = [e for e in pool if e.id in chosen]
    stages["after_mix"] = _kinds(pool)
    return pool, stages


def _kinds(examples: Iterable[Example]) -> dict:
    counts = Counter(e.kind for e in examples)
    return {"real": counts["real"], "synthetic": counts["synthetic"]}


def split_by_package(examples: list[Example], valid_share: float, seed: int) -> tuple[list[Example], list[Example]]:
    """(train, valid): whole packages go to one side; about ``valid_share`` of the packages to valid."""
    packages = sorted({e.origin.name for e in examples})
    random.Random(f"{seed}/split").shuffle(packages)
    n_valid = max(1, round(len(packages) * valid_share)) if len(packages) > 1 else 0
    held_out = set(packages[:n_valid])
    train = sorted((e for e in examples if e.origin.name not in held_out), key=lambda e: e.id)
    valid = sorted((e for e in examples if e.origin.name in held_out), key=lambda e: e.id)
    return train, valid


def record(example: Example, seed: int) -> dict:
    """The JSON record of an example with its update snippet (``select`` kept only examples that have one)."""
    snippet = snippet_for(example.original, example.expected, example.language, random.Random(f"{seed}/{example.id}"))
    origin = example.origin
    source = {"package": origin.name, "from": origin.version_from if example.kind == "real" else origin.version_to,
              "to": origin.version_to, "license": origin.license, "kind": example.kind,
              "transform": example.transform}
    return {"id": example.id, "language": example.language, "path": example.path, "original": example.original,
            "update": snippet.text, "instruction": example.instruction, "expected": example.expected,
            "source": source}


def build_training_set(trees: Iterable[tuple[ReleasePair, dict[str, str], dict[str, str]]], spec: TrainSpec,
                       seed: int, eval_packages: set[str]) -> tuple[list[dict], list[dict], dict]:
    """(train records, valid records, counts) from (pair, old tree, new tree) triples: no network here."""
    real, newest = [], {}
    for pair, old, new in trees:
        if pair.name in eval_packages:
            raise FastapplyError(f"{pair.name} is an eval-suite package; training packages must be disjoint")
        real.extend(real_examples(pair, old, new, spec))
        newest[pair.name] = (Origin.of_pair(pair), new)  # pairs come oldest first: the last is the newest release
    synthetic = [e for origin, tree in newest.values() for e in synthetic_examples(origin, tree, spec, seed)]
    return _split_records(*select(real, synthetic, spec, seed), spec, seed)


def corpus_trees(directory: Path) -> Iterator[tuple[Origin, dict[str, str]]]:
    """(origin, {path: text}) of each package of a corpus built by ``data.build_corpus``, one at a time."""
    for package, records in groupby(iter_records(directory), key=lambda r: r["package"]):
        records = list(records)
        first = records[0]
        yield Origin(package, first["version"], first["version"], first["license"]), \
            {r["path"]: r["text"] for r in records}


def build_corpus_training_set(trees: Iterable[tuple[Origin, dict[str, str]]], spec: TrainSpec, seed: int,
                              eval_packages: set[str]) -> tuple[list[dict], list[dict], dict]:
    """(train records, valid records, counts) of synthetic edits only, from (origin, tree) pairs such as
    ``corpus_trees`` gives; there is nothing to mix, so ``spec.real_per_synthetic`` is ignored."""
    spec = replace(spec, real_per_synthetic=None)
    synthetic = []
    for origin, tree in trees:
        if normalize(origin.name) in eval_packages:
            raise FastapplyError(f"{origin.name} is an eval-suite package; training packages must be disjoint")
        synthetic.extend(synthetic_examples(origin, tree, spec, seed))
    return _split_records(*select([], synthetic, spec, seed), spec, seed)


def _split_records(examples: list[Example], stages: dict, spec: TrainSpec,
                   seed: int) -> tuple[list[dict], list[dict], dict]:
    train, valid = split_by_package(examples, spec.valid_share, seed)
    train_records = [record(e, seed) for e in train]
    valid_records = [record(e, seed) for e in valid]
    counts = {"stages": stages, "train": _summary(train_records), "valid": _summary(valid_records)}
    return train_records, valid_records, counts


def _summary(records: list[dict]) -> dict:
    return {
        "examples": len(records),
        "packages": len({r["source"]["package"] for r in records}),
        "by_kind": dict(sorted(Counter(r["source"]["kind"] for r in records).items())),
        "by_transform": dict(sorted(Counter(r["source"]["transform"] for r in records).items())),
        "by_language": dict(sorted(Counter(r["language"] for r in records).items())),
        "with_instruction": sum(1 for r in records if r["instruction"]),
        "under_100_lines": sum(1 for r in records if max(len(r["original"].splitlines()),
                                                         len(r["expected"].splitlines())) < 100),
    }


def mix_ratio(text: str) -> tuple[int, int]:
    """``REAL:SYNTHETIC`` as two counts, such as ``1:4``; ``1:0`` is real edits only."""
    try:
        real, synthetic = (int(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected REAL:SYNTHETIC such as 1:4, got {text!r}") from None
    if real < 1 or synthetic < 0:
        raise argparse.ArgumentTypeError(f"expected at least one real edit and no negative count, got {text!r}")
    return real, synthetic


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=ROOT / "data" / "train_packages.json")
    parser.add_argument("--eval-pairs", type=Path, default=ROOT / "data" / "eval_packages.json")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "train-data")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--mix", type=mix_ratio, default=TrainSpec.real_per_synthetic,
                        help="real : synthetic edits kept (default 1:4; 1:0 keeps every real edit, no synthetic one)")
    parser.add_argument("--corpus", type=Path, default=None, help="synthetic edits of this corpus instead")
    parser.add_argument("--transforms-per-file", type=int, default=TrainSpec.transforms_per_file)
    parser.add_argument("--transforms", nargs="+", choices=sorted(TRANSFORMS), default=(),
                        help="only these synthetic transformations (default: all)")
    parser.add_argument("--max-lines", type=int, default=TrainSpec.max_lines,
                        help="longest file kept (short files first: a CPU trains on few long ones)")
    parser.add_argument("--short-keep", type=float, default=TrainSpec.short_keep,
                        help="share of the examples of files under 100 lines that is kept (1 keeps all)")
    args = parser.parse_args(argv)
    spec = replace(TrainSpec(), real_per_synthetic=args.mix, max_examples=args.max_examples,
                   transforms_per_file=args.transforms_per_file,
                   transforms=tuple(args.transforms), max_lines=args.max_lines, short_keep=args.short_keep)
    if args.corpus is not None:
        train, valid, counts = build_corpus_training_set(corpus_trees(args.corpus), spec, args.seed,
                                                         eval_package_names(args.eval_pairs))
    else:
        eval_packages = {pair.name for pair in load_pairs(args.eval_pairs)}
        trees = fetched_trees(load_pairs(args.pairs), args.cache)
        train, valid, counts = build_training_set(trees, spec, args.seed, eval_packages)
    args.out.mkdir(parents=True, exist_ok=True)
    dump_tasks(args.out / "train.jsonl.gz", train)
    dump_tasks(args.out / "valid.jsonl.gz", valid)
    (args.out / "counts.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(counts, indent=2))


if __name__ == "__main__":
    main()
