"""The training-set builder's corpus mode: synthetic edits of a corpus built from a fake site folder."""

from __future__ import annotations

import json

import pytest

from data.build_corpus import build_corpus
from data.build_train import TrainSpec, build_corpus_training_set, corpus_trees, main
from fastapply.errors import FastapplyError
from fastapply.tasks import load_tasks
from tests.test_build_train import _js_module, _python_module
from tests.test_corpus import _dist

PACKAGES = {"alpha": ("1.0", "MIT"), "beta": ("2.1", "Apache-2.0"), "gamma": ("0.4", "BSD-3-Clause")}
SPEC = TrainSpec(short_keep=0.0, per_name=50, valid_share=0.34)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    site = tmp_path_factory.mktemp("site-packages")
    for name, (version, license_id) in PACKAGES.items():
        files = {f"{name}/m{i}.py": _python_module(f"{name}{i}", 14).encode() for i in range(3)}
        files[f"{name}/web.js"] = _js_module(name, 16).encode()
        _dist(site, name, version, {"License-Expression": license_id}, files)
    out = tmp_path_factory.mktemp("corpus")
    build_corpus(out, paths=[str(site)], stdlib=False)
    return out


@pytest.fixture(scope="module")
def built(corpus):
    return build_corpus_training_set(corpus_trees(corpus), SPEC, seed=0, eval_packages=set())


def test_corpus_trees_group_files_by_package(corpus):
    trees = list(corpus_trees(corpus))
    assert [(o.name, o.version_from, o.version_to, o.license) for o, _ in trees] == [
        ("alpha", "1.0", "1.0", "MIT"), ("beta", "2.1", "2.1", "Apache-2.0"), ("gamma", "0.4", "0.4", "BSD-3-Clause")]
    assert sorted(trees[0][1]) == ["alpha/m0.py", "alpha/m1.py", "alpha/m2.py", "alpha/web.js"]


def test_examples_are_synthetic_edits_with_their_corpus_source(built):
    train, valid, counts = built
    records = train + valid
    assert len(records) == 3 * 4 * 2  # 3 packages of 4 files of >= 100 lines, 2 transformations each
    assert all(r["original"] != r["expected"] for r in records)
    for r in records:
        version, license_id = PACKAGES[r["source"]["package"]]
        assert r["source"] == r["source"] | {"from": version, "to": version, "license": license_id,
                                              "kind": "synthetic"}
    assert {r["language"] for r in records} == {"python", "javascript"}
    assert "after_mix" not in counts["stages"]
    assert counts["stages"]["after_cap"] == {"real": 0, "synthetic": 24}


def test_split_is_by_package(built):
    train, valid, _ = built
    train_packages = {r["source"]["package"] for r in train}
    valid_packages = {r["source"]["package"] for r in valid}
    assert len(valid_packages) == 1 and not train_packages & valid_packages
    assert train_packages | valid_packages == set(PACKAGES)


def test_build_is_deterministic_and_capped(corpus, built):
    assert build_corpus_training_set(corpus_trees(corpus), SPEC, seed=0, eval_packages=set()) == built
    other, _, _ = build_corpus_training_set(corpus_trees(corpus), SPEC, seed=1, eval_packages=set())
    assert [r["expected"] for r in other] != [r["expected"] for r in built[0]]
    capped = TrainSpec(short_keep=0.0, per_name=50, valid_share=0.34, max_examples=5)
    train, valid, counts = build_corpus_training_set(corpus_trees(corpus), capped, seed=0, eval_packages=set())
    assert len(train + valid) == 5 and counts["stages"]["after_cap"]["synthetic"] == 5


def test_eval_packages_are_refused(corpus):
    with pytest.raises(FastapplyError, match="beta is an eval-suite package"):
        build_corpus_training_set(corpus_trees(corpus), SPEC, seed=0, eval_packages={"beta"})


def test_command_writes_loadable_sets(corpus, tmp_path, capsys):
    main(["--corpus", str(corpus), "--out", str(tmp_path), "--max-examples", "6"])
    counts = json.loads((tmp_path / "counts.json").read_text())
    train, valid = load_tasks(tmp_path / "train.jsonl.gz"), load_tasks(tmp_path / "valid.jsonl.gz")
    assert len(train) + len(valid) == 6 == counts["train"]["examples"] + counts["valid"]["examples"]
    assert json.loads(capsys.readouterr().out) == counts
