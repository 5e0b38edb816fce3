"""The training-set builder on a small local corpus (no network), and each synthetic transformation."""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import replace

import pytest

from data.build_train import Example, Origin, TrainSpec, build_training_set, mix_ratio, select
from data.releases import Release, ReleasePair
from data.styles import MARKERS
from data.transforms import (add_function, add_import, change_line, delete_function, modify_function, remove_comment,
                             rename_symbol)
from data.transforms_python import NEW_PARAMETERS, add_docstring, change_signature
from fastapply.errors import FastapplyError
from fastapply.prompt import PRESETS, parse_answer
from fastapply.syntax import comment, count_errors
from fastapply.tasks import dump_tasks, load_tasks


def _pair(ecosystem: str, package: str) -> ReleasePair:
    return ReleasePair(ecosystem, package, "MIT", Release("1.0", f"https://example.invalid/{package}-1.0", "sha256:0"),
                       Release("1.1", f"https://example.invalid/{package}-1.1", "sha256:0"))


def _python_module(tag: str, functions: int) -> str:
    parts = ['"""Module {tag}."""\n\nimport os\nimport sys\n'.format(tag=tag)]
    for i in range(functions):
        parts.append(f'\n\n# Helper {tag} number {i} for the tests.\ndef {tag}_f{i}(value, scale=2):\n'
                     f'    """Scale {tag} {i}."""\n    base = value * scale\n    shifted = base + {i}\n'
                     f'    return shifted\n')
    parts.append(f"\n\nRESULT = {tag}_f0(1) + {tag}_f1(2)\n")
    return "".join(parts)


def _js_module(tag: str, functions: int) -> str:
    parts = ["import path from 'path';\nimport fs from 'fs';\n"]
    for i in range(functions):
        parts.append(f"\n// Helper {tag} number {i} for the tests.\nexport function {tag}Fn{i}(value) {{\n"
                     f"  const base = value * {i + 2};\n  const shifted = base + {i};\n  return shifted;\n}}\n")
    parts.append(f"\nexport const result = {tag}Fn0(1) + {tag}Fn1(2);\n")
    return "".join(parts)


def _edited(text: str, token: str) -> str:
    return text.replace(f"shifted = base + 3", f"shifted = base + 3 + {token}", 1)


def _corpus():
    """Two packages with two releases each: long and short files, repeated names, changed files."""
    alpha_old = {f"alpha/m{i}.py": _python_module(f"a{i}", 14) for i in range(6)}
    alpha_old |= {f"alpha/sub{i}/__init__.py": _python_module(f"s{i}", 14) for i in range(4)}
    alpha_old |= {f"alpha/short{i}.py": _python_module(f"t{i}", 3) for i in range(3)}
    alpha_new = dict(alpha_old)
    for i in range(6):
        alpha_new[f"alpha/m{i}.py"] = _edited(alpha_old[f"alpha/m{i}.py"], "1")
    beta_old = {f"src/b{i}.js": _js_module(f"b{i}", 16) for i in range(6)}
    beta_new = {path: _edited(text, "2") for path, text in beta_old.items()}
    return [(_pair("pypi", "alpha"), alpha_old, alpha_new), (_pair("npm", "beta"), beta_old, beta_new)]


SPEC = TrainSpec(short_keep=0.0, per_name=5, transforms_per_file=4, valid_share=0.5)


@pytest.fixture(scope="module")
def built():
    return build_training_set(_corpus(), SPEC, seed=0, eval_packages={"pypi/requests"})


def _lines(record: dict) -> int:
    return max(len(record["original"].splitlines()), len(record["expected"].splitlines()))


def test_mix_is_one_real_to_four_synthetic(built):
    train, valid, counts = built
    records = train + valid
    kinds = [r["source"]["kind"] for r in records]
    assert kinds.count("real") == 12  # 6 changed files in each package, all kept
    assert kinds.count("synthetic") == 4 * kinds.count("real")
    assert counts["stages"]["after_mix"] == {"real": 12, "synthetic": 48}
    assert counts["train"]["examples"] + counts["valid"]["examples"] == len(records)


def test_down_sampling_caps_dedup_and_no_ops_hold(built):
    train, valid, counts = built
    records = train + valid
    assert all(_lines(r) >= 100 for r in records)  # short_keep=0: the 3 short files give nothing
    assert counts["stages"]["after_short_downsampling"]["synthetic"] < counts["stages"]["after_dedup"]["synthetic"]
    names = [r["path"].rsplit("/", 1)[-1] for r in records]
    assert names.count("__init__.py") == 5  # 4 files x 4 transformations, capped
    assert all(r["original"] != r["expected"] for r in records)
    assert len({(r["original"], r["expected"]) for r in records}) == len(records)


def test_transforms_option_draws_only_the_named_ones():
    spec = replace(SPEC, transforms=("change_line", "add_import"))
    train, valid, _ = build_training_set(_corpus(), spec, seed=0, eval_packages=set())
    transforms = {r["source"]["transform"] for r in train + valid if r["source"]["kind"] == "synthetic"}
    assert transforms == {"change_line", "add_import"}


def test_split_is_by_package(built):
    train, valid, _ = built
    train_packages = {r["source"]["package"] for r in train}
    valid_packages = {r["source"]["package"] for r in valid}
    assert train_packages and valid_packages and not train_packages & valid_packages
    assert train_packages | valid_packages == {"pypi/alpha", "npm/beta"}


def test_records_load_as_tasks_and_answers_parse(built, tmp_path):
    train, valid, _ = built
    assert dump_tasks(tmp_path / "train.jsonl.gz", train) == len(train)
    loaded = load_tasks(tmp_path / "train.jsonl.gz")
    assert [t.to_json() for t in loaded] == train
    for record in train + valid:
        for preset in PRESETS.values():
            parsed = parse_answer(preset, preset.answer(record["expected"]))
            assert parsed.closed and parsed.file == record["expected"]
        markers = {comment(record["language"], marker) for marker in MARKERS}
        kept = [line for line in record["update"].splitlines() if line.strip() not in markers]
        it = iter(record["expected"].splitlines())
        assert all(any(line == other for other in it) for line in kept)
        if record["source"]["kind"] == "real":
            assert record["instruction"] == "" and record["source"]["transform"] == "release"


def test_build_is_reproducible(built):
    assert build_training_set(_corpus(), SPEC, seed=0, eval_packages=set()) == built


def test_eval_packages_are_refused():
    with pytest.raises(FastapplyError, match="pypi/alpha is an eval-suite package"):
        build_training_set(_corpus(), SPEC, seed=0, eval_packages={"pypi/alpha"})


def _example(i: int, kind: str, name: str, lines: int, original: str | None = None, expected: str | None = None):
    body = "".join(f"x{i}_{n} = {n}\n" for n in range(lines))
    origin = Origin.of_pair(_pair("pypi", "p"))
    return Example(f"{kind}-{i}", kind, "release" if kind == "real" else "t", origin, f"pkg/{name}",
                   "python", body if original is None else original, body + "y = 1\n" if expected is None else expected, "")


def test_select_steps_known_counts():
    real = [_example(i, "real", f"r{i}.py", 120) for i in range(3)]
    real.append(_example(3, "real", "noop.py", 120, original="a = 1\n", expected="a = 1\n"))
    real.append(_example(4, "real", "dup.py", 120, original=real[0].original, expected=real[0].expected))
    synthetic = [_example(10 + i, "synthetic", f"s{i}.py", 120) for i in range(9)]
    synthetic += [_example(20 + i, "synthetic", "same.py", 120) for i in range(3)]
    synthetic += [_example(30 + i, "synthetic", f"short{i}.py", 20) for i in range(3)]
    spec = TrainSpec(short_keep=0.0, per_name=2)
    kept, stages = select(real, synthetic, spec, seed=0)
    assert stages == {
        "candidates": {"real": 5, "synthetic": 15},
        "after_no_op_removal": {"real": 4, "synthetic": 15},
        "after_dedup": {"real": 3, "synthetic": 15},
        "after_short_downsampling": {"real": 3, "synthetic": 12},
        "after_name_cap": {"real": 3, "synthetic": 11},
        "after_mix": {"real": 2, "synthetic": 8},
    }
    assert len(kept) == 10
    _, all_short = select(real, synthetic, TrainSpec(short_keep=1.0, per_name=2), seed=0)
    assert all_short["after_short_downsampling"] == {"real": 3, "synthetic": 15}
    _, limited = select(real, synthetic, TrainSpec(short_keep=0.0, per_name=2, max_examples=5), seed=0)
    assert limited["after_mix"] == {"real": 1, "synthetic": 4}
    _, real_only = select(real, synthetic, TrainSpec(short_keep=0.0, per_name=2, real_per_synthetic=(1, 0)), seed=0)
    assert real_only["after_mix"] == {"real": 3, "synthetic": 0}


def test_mix_ratio_option():
    assert mix_ratio("1:4") == (1, 4) and mix_ratio("1:0") == (1, 0)
    for bad in ("14", "a:b", "0:4", "1:-1", "1:2:3"):
        with pytest.raises(argparse.ArgumentTypeError):
            mix_ratio(bad)


# --- each transformation, with a known answer ------------------------------------------------------------

RNG = random.Random(0)


def test_add_function_python():
    text = "import os\n\n\ndef helper(x):\n    return x + 1\n\n\nVALUE = helper(2)\n"
    edit = add_function(text, "python", random.Random(1))
    assert edit.original == "import os\n\n\nVALUE = helper(2)\n"
    assert edit.expected == text and edit.instruction == "Add the function `helper`."


def test_delete_function_javascript_takes_its_comment_and_export():
    text = "const a = 1;\n\n// Doubles a number.\nexport function double(n) {\n  return n * 2;\n}\n\nconsole.log(a);\n"
    edit = delete_function(text, "javascript", RNG)
    assert edit.original == text
    assert edit.expected == "const a = 1;\n\nconsole.log(a);\n"
    assert edit.instruction == "Delete the function `double`."


def test_delete_method_rust_names_its_type():
    text = ("struct Rect { w: u32, h: u32 }\n\nimpl Rect {\n    /// Area.\n    #[inline]\n"
            "    fn area(&self) -> u32 {\n        self.w * self.h\n    }\n}\n")
    edit = delete_function(text, "rust", RNG)
    assert edit.expected == "struct Rect { w: u32, h: u32 }\n\nimpl Rect {\n}\n"
    assert edit.instruction == "Delete the method `area` from `Rect`."


def test_modify_function_go_removes_one_inner_statement():
    text = 'package main\n\nimport "fmt"\n\nfunc run() int {\n\tx := 1\n\tfmt.Println(x)\n\treturn x\n}\n'
    edit = modify_function(text, "go", RNG)
    assert edit.expected == text and edit.instruction == ""
    assert edit.original == text.replace("\tfmt.Println(x)\n", "")


def test_rename_symbol_typescript():
    text = ("export function computeTotal(items: number[]): number {\n  return items.length;\n}\n\n"
            "const total = computeTotal([1, 2]);\n")
    edit = rename_symbol(text, "typescript", RNG)
    new = re.fullmatch(r"Rename `computeTotal` to `(\w+)`\.", edit.instruction).group(1)
    assert new in ("computeTotalImpl", "computeTotalV2", "computeTotalInner")
    assert edit.original == text and edit.expected == text.replace("computeTotal", new)


def test_rename_symbol_skips_names_that_appear_in_strings():
    text = 'def compute(x):\n    return x\n\n\nprint("compute", compute(1))\n'
    assert rename_symbol(text, "python", RNG) is None


def test_add_import_python_leaves_future_imports_alone():
    text = "from __future__ import annotations\n\nimport os\n\nPATH = os.sep\n"
    edit = add_import(text, "python", RNG)
    assert edit.original == "from __future__ import annotations\n\n\nPATH = os.sep\n"
    assert edit.expected == text and edit.instruction == "Add the import `import os`."


def test_remove_comment_c():
    text = ('#include <stdio.h>\n\nint main(void) {\n    /* Print a greeting. */\n    printf("hi\\n");\n'
            "    return 0;\n}\n")
    edit = remove_comment(text, "c", RNG)
    assert edit.expected == text.replace("    /* Print a greeting. */\n", "")
    assert edit.instruction == "Remove the comment that starts `/* Print a greeting. */`."


def test_change_signature_python_updates_definition_and_calls():
    text = ("def scale(x, factor=2):\n    return x * factor\n\n\nprint(scale(3))\nprint(scale(4, factor=5))\n"
            "total = scale(\n    5,\n)\n")
    edit = change_signature(text, "python", RNG)
    name, default, value = next(p for p in NEW_PARAMETERS if f"`{p[0]}=" in edit.instruction)
    assert edit.instruction == (f"Add a parameter `{name}={default}` to `scale` and pass `{name}={value}` "
                                "where it is called.")
    assert edit.expected == (f"def scale(x, factor=2, {name}={default}):\n    return x * factor\n\n\n"
                             f"print(scale(3, {name}={value}))\nprint(scale(4, factor=5, {name}={value}))\n"
                             f"total = scale(\n    5,\n    {name}={value},\n)\n")
    assert change_signature(text, "javascript", RNG) is None


def test_add_docstring_python():
    text = 'def load(path):\n    """Read the file at path."""\n\n    return open(path).read()\n'
    edit = add_docstring(text, "python", RNG)
    assert edit.original == "def load(path):\n    return open(path).read()\n"
    assert edit.expected == text and edit.instruction == "Add a docstring to `load`."


def test_change_line_changes_leaves_in_place_and_keeps_the_real_file_as_the_answer():
    text = ("import os\n\n\ndef scale(value, factor):\n    total = value * 3\n"
            '    label = "scaled value"  # shown to users\n    return total, label, factor\n')
    lines = text.splitlines()
    seen = set()
    for seed in range(60):
        edit = change_line(text, "python", random.Random(seed))
        assert edit.expected == text and edit.instruction == "" and edit.original != text
        old = edit.original.splitlines()
        assert len(old) == len(lines) and old[:2] == lines[:2]  # line for line; the first two never touched
        changed = [(a, b) for a, b in zip(old, lines) if a != b]
        assert 1 <= len(changed) <= 3
        seen.update(changed)
    assert {("    total = value * 4", lines[4]), ("    total = value * 2", lines[4])} & seen  # a number
    assert ('    label = "scaled value"', lines[5]) in seen  # a trailing comment missing
    assert ('    label = "scaled"  # shown to users', lines[5]) in seen  # a string's last word missing
    assert any(a.startswith("def scale(") for a, _ in seen)  # a name swapped for another of the file


def test_change_line_keeps_the_original_parsing():
    text = "const a = 1;\nconst b = 2;\nexport function twice(n) {\n  return n * 2; // doubled\n}\nconsole.log(twice(a));\n"
    for seed in range(20):
        edit = change_line(text, "javascript", random.Random(seed))
        assert edit.expected == text and count_errors(edit.original, "javascript") == 0


def test_transformations_decline_files_without_a_site():
    text = "x = 1\n"
    for transform in (add_function, delete_function, modify_function, rename_symbol, add_import, remove_comment,
                      change_signature, add_docstring, change_line):
        assert transform(text, "python", RNG) is None


def test_python_sites_must_stay_valid_python():
    # tree-sitter accepts a class with no body; Python does not, so the only method cannot be removed
    text = "class StdDev(Base):\n    def __init__(self, term):\n        super().__init__(term)\n\n\nclass Pop(Base):\n    pass\n"
    assert add_function(text, "python", RNG) is None and delete_function(text, "python", RNG) is None
