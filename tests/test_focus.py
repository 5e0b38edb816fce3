"""A long file's edit shown to the model as the top-level statements around it (``fastapply.focus``):
where the window is cut, that the answer is put back with the rest of the file untouched, that the
engine, the CLI, the eval and the bench use it (and ``--whole-file`` turns it off), on a real model's
runs."""

import json

import pytest
from typer.testing import CliRunner

from fastapply.cli import app
from fastapply.focus import Focus, focus
from fastapply.merge import MergeResult, merge
from tests.samples import SAMPLE_EXPECTED, SAMPLE_PY, SAMPLE_UPDATE


def _helpers(first: int, count: int) -> str:
    return "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(first, first + count))


# the README's example file between 120 lines of other functions above and 80 below
LONG = _helpers(0, 30) + SAMPLE_PY + "\n\n" + _helpers(30, 20)
LONG_EXPECTED = LONG.replace(SAMPLE_PY, SAMPLE_EXPECTED)


def test_the_window_is_the_top_level_statements_around_the_merges_placement():
    merged = merge(LONG, SAMPLE_UPDATE, "python")
    window = focus(LONG, SAMPLE_UPDATE, merged, "python")
    lines = LONG.splitlines(keepends=True)
    assert window is not None and window.lines == len(lines)
    first, last = merged.span
    assert window.start <= first - 3 and window.end >= last + 3  # three lines of context at least
    assert not lines[window.start][0].isspace() and not lines[window.end][0].isspace()  # cut at top-level lines
    shown = window.cut(LONG)
    assert SAMPLE_PY.split("\n\n\n")[1] in shown and len(shown.splitlines()) < len(lines) // 2
    assert window.splice(LONG, shown) == LONG  # the window put back as it was: the file
    assert window.splice(LONG, window.cut(LONG_EXPECTED)) == LONG_EXPECTED  # the edit only moves the lines after it
    assert window.splice(LONG, window.cut(merged.text)) == merged.text


def _placed(span, confidence="certain"):
    return MergeResult("placed", confidence, (), span)


def test_no_window_where_it_is_the_whole_file_an_instruction_nothing_placed_or_a_cut_inside_a_string():
    merged = merge(LONG, SAMPLE_UPDATE, "python")
    short = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"  # the window around g's body is the file
    assert focus(short, "# ...\ndef g():\n    return 3\n", merge(short, "# ...\ndef g():\n    return 3\n", "python"),
                 "python") is None
    sample = focus(SAMPLE_PY, SAMPLE_UPDATE, merge(SAMPLE_PY, SAMPLE_UPDATE, "python"), "python")  # 29 lines
    assert sample.cut(SAMPLE_PY) == SAMPLE_PY[SAMPLE_PY.index("def read_config"):]  # the imports are left out
    assert focus(LONG, SAMPLE_UPDATE, merged, "python", "Also rename every helper.") is None  # may ask for more
    assert focus(LONG, SAMPLE_UPDATE, None, "python") is None
    assert focus(LONG, SAMPLE_UPDATE, _placed(None, "none"), "python") is None  # the merge placed nothing
    assert focus(LONG, SAMPLE_UPDATE, _placed((0, len(LONG.splitlines()))), "python") is None  # the whole file
    # a column-0 line inside a string above the edit looks like a statement: cut there, the window would not parse
    text = _helpers(0, 30) + 'USAGE = """\nusage:\n  tool FILE\n"""\n' + _helpers(30, 20)
    at = text.splitlines().index('"""') + 1
    assert focus(text, "x = 1\n", _placed((at, at + 2)), "python") is None
    assert focus(text, "x = 1\n", _placed((at + 8, at + 10)), "python") is not None


def test_an_uncertain_merge_focuses_only_where_its_placement_cannot_be_elsewhere():
    """A segment whose lines are found outside the window too may have been put in the wrong place, and
    one with no line in the window anchored nowhere: the model gets the whole file. A certain merge is
    trusted."""
    text = _helpers(0, 40) + "def twin(x):\n    y = x * 2\n    return y\n\n\n" + _helpers(40, 20)
    at = text.splitlines().index("def twin(x):")
    span = (at + 1, at + 2)
    update = "# ... existing code ...\ndef twin(x):\n    y = x * 3\n# ... existing code ...\n"
    assert focus(text, update, _placed(span, "likely"), "python") is not None
    copied = "# ... existing code ...\n    return x + 7\n    y = x * 3\n# ... existing code ...\n"  # helper_7's line
    assert focus(text, copied, _placed(span, "likely"), "python") is None
    assert focus(text, copied, _placed(span), "python") is not None
    nowhere = "# ... existing code ...\ndef twin(x):\n    y = x * 3\n# ... existing code ...\nz = 42\n"
    assert focus(text, nowhere, _placed(span, "likely"), "python") is None  # `z = 42` is in no line of the window


@pytest.mark.parametrize("original", ["a\nb\nc\n", "a\nb\nc"])
def test_a_splice_keeps_the_files_last_newline_or_its_lack(original):
    for window in (Focus(1, 2, 3), Focus(1, 3, 3), Focus(0, 1, 3)):
        assert window.splice(original, window.cut(original)) == original
    assert Focus(1, 2, 3).splice(original, "B\nB2") == original.replace("b\n", "B\nB2\n")
    assert Focus(1, 3, 3).cut(original) == original[2:]


def _perfect(shown: str, update, instruction, merged, watch):
    """A model that applies the README's edit to whatever part of ``LONG`` around it it is shown."""
    from fastapply.engine import ModelRun

    _perfect.calls.append((shown, merged))
    before = LONG.index(shown)
    after = len(LONG) - before - len(shown)
    return ModelRun(LONG_EXPECTED[before:len(LONG_EXPECTED) - after], True, {"tokens": 1})


def test_the_engine_shows_the_model_the_window_and_validates_the_whole_new_file():
    from fastapply.engine import EditRefused, resolve_edit

    merged = merge(LONG, SAMPLE_UPDATE, "python")
    window = focus(LONG, SAMPLE_UPDATE, merged, "python")
    for engine, draft in (("auto", window.cut(merged.text)), ("model", None)):
        _perfect.calls = []
        outcome = resolve_edit(LONG, SAMPLE_UPDATE, "python", engine, _perfect)
        assert outcome.text == LONG_EXPECTED and outcome.engine == "model"
        assert _perfect.calls == [(window.cut(LONG), draft)]
        assert outcome.model_run.stats == {"tokens": 1, "window": [window.start + 1, window.end]}
    _perfect.calls = []
    whole = resolve_edit(LONG, SAMPLE_UPDATE, "python", "auto", _perfect, focus=False)
    assert whole.text == LONG_EXPECTED and _perfect.calls == [(LONG, merged.text)] and "window" not in whole.model_run.stats

    def drops_read_config(shown, update, instruction, merged, watch):
        # the window's answer loses a function the edit did not touch
        from dataclasses import replace

        answer = _perfect(shown, update, instruction, merged, watch)
        unasked = SAMPLE_PY[SAMPLE_PY.index("def read_config"):SAMPLE_PY.index("def main")]
        assert unasked in answer.text
        return replace(answer, text=answer.text.replace(unasked, ""))

    with pytest.raises(EditRefused) as refused:
        resolve_edit(LONG, SAMPLE_UPDATE, "python", "model", drops_read_config)
    assert "unrelated-deletion" in refused.value.reasons


def test_the_cli_runs_a_real_model_on_the_window_and_whole_file_turns_it_off(tmp_path, tiny_model, tiny_checkpoint):
    from fastapply.apply import apply_edit

    path, edit = tmp_path / "long.py", tmp_path / "update.txt"
    path.write_text(LONG)
    edit.write_text(SAMPLE_UPDATE)
    args = [str(path), "--model", str(tiny_checkpoint), "--device", "cpu", "--dtype", "float32", "--engine", "model",
            "--edit-file", str(edit), "--max-new-tokens", "24", "--force", "--json"]
    focused = json.loads(CliRunner().invoke(app, args).stdout)
    window = focus(LONG, SAMPLE_UPDATE, merge(LONG, SAMPLE_UPDATE, "python"), "python")
    model, tokenizer = tiny_model
    answer = apply_edit(model, tokenizer, window.cut(LONG), SAMPLE_UPDATE, max_new_tokens=24, language="python")
    assert focused["stats"]["window"] == [window.start + 1, window.end]
    assert focused["text"] == window.splice(LONG, answer.text)  # the model's answer on the window, put back
    assert focused["text"].startswith(LONG[:LONG.index(window.cut(LONG))])  # nothing above the window changes
    whole = json.loads(CliRunner().invoke(app, [*args, "--whole-file"]).stdout)
    answer = apply_edit(model, tokenizer, LONG, SAMPLE_UPDATE, max_new_tokens=24, language="python")
    assert "window" not in whole["stats"] and whole["text"] == answer.text


def test_the_eval_records_the_window_and_resumes_only_runs_that_focused_alike(tmp_path, tiny_model):
    from fastapply.evaluate import EvalConfig, run_eval
    from fastapply.tasks import Task

    model, tokenizer = tiny_model
    tasks = [Task("long", "python", "long.py", LONG, SAMPLE_UPDATE, "", LONG_EXPECTED, {"package": "tests"})]
    records = {}
    for on in (True, False):
        config = EvalConfig("model", ("fastapply",), model="tiny", dtype="float32", device="cpu", time_prefill=False,
                            max_new_tokens=24, focus=on)
        records[on] = run_eval(tasks, config, tmp_path / str(on), model=model, tokenizer=tokenizer).records[0]
    window = focus(LONG, SAMPLE_UPDATE, merge(LONG, SAMPLE_UPDATE, "python"), "python")
    assert records[True]["window"] == [window.start + 1, window.end] and records[True]["options"]["focus"] is True
    assert "window" not in records[False] and "focus" not in records[False]["options"]
    before, after = LONG.split(window.cut(LONG))
    assert records[True]["output"].startswith(before) and records[True]["output"].endswith(after)
    assert records[True]["speed"]["tokens"] == records[False]["speed"]["tokens"] == 24  # a budget of 24 on both
    assert records[True]["output"] != records[False]["output"]
    from fastapply.errors import UsageError
    from fastapply.report import summarize, write_report

    with pytest.raises(UsageError, match="differs in: focus"):  # a whole-file run does not resume a focused one
        run_eval(tasks, config, tmp_path / "True", model=model, tokenizer=tokenizer)
    figures = summarize([records[True]])["policies"]["fastapply"]
    assert figures["focused"] == 1 and figures["focused_written_exact"] == 0
    write_report(tmp_path / "report", summarize([records[True]]))
    assert "- fastapply: 1 answers to a window of the file" in (tmp_path / "report" / "report.md").read_text()
    assert "focused" not in summarize([records[False]])["policies"]["fastapply"]


def test_the_bench_shows_every_method_the_window_and_times_the_merge_into_each(tiny_model, monkeypatch):
    """``fastapply bench --focus`` times what ``fastapply FILE`` does: every method rewrites the window,
    and the merge that placed it counts in every method's time, plain decoding's too."""
    from dataclasses import replace

    from fastapply.bench import BenchCase, Shown, run_bench

    model, tokenizer = tiny_model
    case = BenchCase("long", LONG, SAMPLE_UPDATE, expected=LONG_EXPECTED, language="python")
    methods = ("plain", "fastapply")
    whole = run_bench(model, tokenizer, [case], "replay", methods=methods)
    place = Shown.of
    monkeypatch.setattr(Shown, "of", classmethod(lambda cls, *args: replace(place(*args), merge_s=100.0)))
    focused = run_bench(model, tokenizer, [case], "replay", methods=methods, focus=True)
    window = focus(LONG, SAMPLE_UPDATE, merge(LONG, SAMPLE_UPDATE, "python"), "python")
    assert [row.as_dict()["window"] for row in focused] == [[window.start + 1, window.end]] * 2
    assert all("window" not in row.as_dict() for row in whole)
    assert all(row.same_as_plain and row.lines == len(LONG.splitlines()) for row in focused)
    assert focused[0].stats.tokens < whole[0].stats.tokens  # the window's answer, not the whole file's
    assert all(row.stats.prefill_s >= 100.0 for row in focused)  # the merge placed the window for both
    shown = place(case, False, True)
    assert shown.merged is None and shown.case.original == window.cut(LONG)
    assert shown.case.expected == window.cut(LONG_EXPECTED)
