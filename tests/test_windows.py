"""data.windows: a long real edit cut to the top-level statements around its change, and data.mix."""

import random
from collections import Counter

from data.mix import mix
from data.windows import window

FUNCS = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(40))  # 160 lines


def record(original, expected, kind="real", package="p"):
    return {"id": "r", "language": "python", "path": "a.py", "original": original, "update": "",
            "instruction": "", "expected": expected, "source": {"kind": kind, "package": package}}


def test_window_cuts_both_files_at_the_same_top_level_boundaries():
    expected = FUNCS.replace("    return x + 20\n", "    y = x * 2\n    return y + 20\n")
    cut = window(record(FUNCS, expected), 30, random.Random(0))
    assert cut is not None and cut["id"] == "r-window-77"
    assert cut["original"].startswith("def f19(x):") and cut["original"].endswith("return x + 21\n")
    assert cut["expected"] == cut["original"].replace("    return x + 20\n", "    y = x * 2\n    return y + 20\n")
    assert "y = x * 2" in cut["update"]


def test_changes_spread_wider_than_the_window_are_left_alone():
    expected = FUNCS.replace("return x + 1\n", "return x - 1\n").replace("return x + 39\n", "return x - 39\n")
    assert window(record(FUNCS, expected), 60, random.Random(0)) is None


def test_mix_keeps_short_files_cuts_long_real_edits_and_repeats_scarce_real_ones():
    expected = FUNCS.replace("    return x + 20\n", "    return -x\n")
    synthetic = [record(f"x = {i}\n", f"x = {i + 1}\n", "synthetic") | {"id": f"s{i}"} for i in range(20)]
    records, summary = mix([[record(FUNCS, expected)], synthetic], 30, 10, 0.2, seed=0)
    assert len(records) == 10 and summary["real_windows"] == 1
    assert sum(r["source"]["kind"] == "real" for r in records) == 2  # one window, shown twice
    assert all(r["original"].count("\n") <= 30 for r in records)


def test_mix_rewords_or_drops_templated_instructions_and_keeps_them_when_asked():
    synthetic = [record(f"x = {i}\n", f"x = {i + 1}\n", "synthetic")
                 | {"id": f"s{i}", "instruction": f"Add the method `m{i}` to `C`."} for i in range(200)]
    records, summary = mix([synthetic], 30, 200, 0.2, seed=0)
    wordings = Counter("" if not r["instruction"] else "template" if r["instruction"].startswith("Add the method")
                       else "reworded" for r in records)
    assert 0.3 < wordings[""] / 200 < 0.5 and wordings["template"] > 20 and wordings["reworded"] > 60
    assert summary["with_instruction"] == 200 - wordings[""]
    assert all(f"m{r['id'][1:]}" in r["instruction"] for r in records if r["instruction"])  # the same method
    assert records == mix([synthetic], 30, 200, 0.2, seed=0)[0]  # deterministic
    kept, _ = mix([synthetic], 30, 200, 0.2, seed=0, keep_instructions=True)
    assert all(r["instruction"].startswith("Add the method") for r in kept)


def test_mix_keeps_an_instruction_alone_only_where_it_says_the_whole_change():
    deletions = [record(f"def f{i}():\n    pass\n\n\nx = {i}\n", f"x = {i}\n", "synthetic")
                 | {"id": f"d{i}", "update": f"# ... existing code ...\nx = {i}\n",
                    "instruction": f"Delete the function `f{i}`."} for i in range(50)]
    additions = [record(f"x = {i}\n", f"def g{i}():\n    pass\n\n\nx = {i}\n", "synthetic")
                 | {"id": f"a{i}", "update": f"def g{i}():\n    pass\n\n\n# ... existing code ...\n",
                    "instruction": f"Add the function `g{i}`."} for i in range(50)]
    records, summary = mix([deletions + additions], 30, 100, 0.0, seed=0, instruction_only_share=0.5)
    alone = [r for r in records if not r["update"]]
    assert 10 < summary["instruction_only"] == len(alone) < 40
    assert all(r["id"].startswith("d") and f"f{r['id'][1:]}" in r["instruction"] for r in alone)  # the same function
    assert all(r["update"] for r in records if r["id"].startswith("a"))  # a new function needs its code
    assert mix([deletions + additions], 30, 100, 0.0, seed=0)[1]["instruction_only"] == 0


def test_mix_leaves_out_the_edits_of_an_earlier_mix_windows_included():
    expected = FUNCS.replace("    return x + 20\n", "    return -x\n")
    long_real = record(FUNCS, expected) | {"id": "long"}
    short_real = [record(f"y = {i}\n", f"y = {i + 1}\n") | {"id": f"r{i}"} for i in range(4)]
    earlier, _ = mix([[long_real], short_real[:2]], 30, 3, 1.0, seed=0)
    assert {r["id"] for r in earlier} == {"long-window-77", "r0", "r1"}
    later, summary = mix([[long_real], short_real], 30, 10, 1.0, seed=1, exclude=[r["id"] for r in earlier])
    assert sorted(r["id"] for r in later) == ["r2", "r2", "r2", "r3", "r3", "r3"]  # what is left, repeated
    assert summary["distinct_real"] == 2 and summary["real_windows"] == 0


def test_mix_leaves_out_held_out_packages():
    records = [record(f"y = {i}\n", f"y = {i + 1}\n", package=f"p{i % 2}") | {"id": f"r{i}"} for i in range(6)]
    kept, _ = mix([records], 30, 3, 1.0, seed=0, held_out={"p1"})
    assert sorted(r["id"] for r in kept) == ["r0", "r2", "r4"]



def test_mix_reindents_the_markers_of_a_share_of_the_edits_and_leaves_the_answers():
    update = "class C:\n    # ... existing code ...\n    def g(self):\n        return 3\n"
    records = []
    for i in range(200):
        original = f"class C:\n    def f(self):\n        return {i}\n\n    def g(self):\n        return 2\n"
        records.append(record(original, original.replace("return 2", "return 3"), "synthetic")
                       | {"id": f"s{i}", "update": update})
    mixed, summary = mix([records], 30, 200, 0.2, seed=0, marker_indent_share=0.25)
    updates = Counter(r["update"] for r in mixed)
    flush = update.replace("    # ...", "# ...")  # the line above, `class C:`, is at column 0 too
    assert set(updates) == {update, flush} and 30 < updates[flush] < 70
    assert summary["markers_reindented"] == updates[flush]
    assert all(r["expected"] == r["original"].replace("return 2", "return 3") for r in mixed)
    assert mixed == mix([records], 30, 200, 0.2, seed=0, marker_indent_share=0.25)[0]  # deterministic
    assert mix([records], 30, 200, 0.2, seed=0)[1]["markers_reindented"] == 0


def test_reindent_markers_flush_or_at_the_code_line_above():
    from data.styles import reindent_markers

    js = "function f() {\n  if (a) {\n    // ... existing code ...\n  }\n}\n"
    assert reindent_markers(js, "javascript", "flush") == js.replace("    // ...", "// ...")
    assert reindent_markers(js, "javascript", "previous") == js.replace("    // ...", "  // ...")
    python = "def f():\n    x = 1\n\n    # ...\n    return x\n"
    assert reindent_markers(python, "python", "previous") == python  # the line above is at its indentation
    assert reindent_markers("# ...\nx = 1\n", "python", "previous") == "# ...\nx = 1\n"  # nothing above: column 0
