"""Known answers for where an answer is likely to leave its draft sources (fastapply/risk.py), and what
that buys: drafts through unchanged code in one pass, stopping at the edit."""

from fastapply.apply import newline_ids, plan_edit
from fastapply.draft import make_drafter
from fastapply.prompt import encode_text
from fastapply.risk import file_risk, line_spans, snippet_risk

ORIGINAL = "".join(f"value_{i} = compute({i})\n" for i in range(10))


def risky_lines(tokenizer, text: str, update: str) -> list[int]:
    """Line numbers of ``text`` with a risky token other than the line break before them."""
    ids = encode_text(tokenizer, text)
    newlines = newline_ids(tokenizer, ids)
    risky = file_risk(tokenizer, ids, newlines, update)
    return [n for n, (start, end) in enumerate(line_spans(ids, newlines)) if risky & set(range(start, end - 1))]


def test_an_insertion_after_a_context_line_risks_only_the_line_it_displaces(tokenizer):
    update = "# ... existing code ...\nvalue_3 = compute(3)\nadded = 1\nvalue_4 = compute(4)\n# ... existing code ...\n"
    assert risky_lines(tokenizer, ORIGINAL, update) == [4, 9]  # the displaced line, and the file's last


def test_a_deletion_risks_the_deleted_line(tokenizer):
    update = "# ... existing code ...\nvalue_2 = compute(2)\nvalue_4 = compute(4)\n# ... existing code ...\n"
    assert risky_lines(tokenizer, ORIGINAL, update) == [3, 9]


def test_new_code_with_no_context_before_it_risks_both_lines_it_may_replace_or_precede(tokenizer):
    update = "# ... existing code ...\nreplacement = 2\nvalue_6 = compute(6)\n# ... existing code ...\n"
    assert risky_lines(tokenizer, ORIGINAL, update) == [5, 6, 9]


def test_a_context_line_followed_by_a_marker_risks_nothing(tokenizer):
    update = "value_2 = compute(2)\n# ... existing code ...\nvalue_7 = compute(7)\n"
    assert risky_lines(tokenizer, ORIGINAL, update) == [9]


def test_a_line_the_source_repeats_places_nothing(tokenizer):
    text = "def f():\n    pass\n\ndef g():\n    pass\n\ndef h():\n    pass\n\ndef i():\n    pass\n"
    # "pass" is in the file four times: alone it does not say where the new line goes; after "def h():"
    # it does ("def i():" follows it in the file, the new line in the snippet)
    update = "def h():\n    pass\n    extra = 1\n"
    assert risky_lines(tokenizer, text, update) == [9, 10]
    assert risky_lines(tokenizer, text, "    pass\n    extra = 1\n") == [10]


def test_a_repeated_line_is_placed_by_the_line_before_it_where_that_pair_is_one(tokenizer):
    text = 'x = 1\n"""\nold doc\n"""\ny = 2\nz = 3\n'
    # the snippet's first quotes (after "x = 1") go on with new text; its second ones with the file's
    # own code: the first quotes of the file are told apart by the line before them
    update = '# ... existing code ...\nx = 1\n"""\nnew doc\n"""\n# ... existing code ...\n'
    assert risky_lines(tokenizer, text, update) == [2, 5]


def test_blank_lines_the_snippet_adds_or_drops_between_two_lines_are_risky(tokenizer):
    def risky(text, update):  # the risky lines' text, a blank line's break included
        ids = encode_text(tokenizer, text)
        newlines = newline_ids(tokenizer, ids)
        marked = file_risk(tokenizer, ids, newlines, update)
        lines = [(start, end, tokenizer.decode(ids[start:end]).strip()) for start, end in line_spans(ids, newlines)]
        return [line for start, end, line in lines if marked & set(range(start, end - 1 if line else end))]

    added = '"""Module."""\n\nimport os\n# ... existing code ...\n'
    assert risky('"""Module."""\nimport os\nimport re\nx = 1\n', added) == ["import os", "x = 1"]
    dropped = "import os\nimport re\n# ... existing code ...\n"
    assert risky("import os\n\nimport re\nx = 1\n", dropped) == ["", "x = 1"]  # the blank line it drops
    kept = "import os\n\nimport re\n# ... existing code ...\n"
    assert risky("import os\n\nimport re\nx = 1\n", kept) == ["x = 1"]  # the file's last line only


def test_snippet_drafts_stop_at_a_marker(tokenizer):
    update = "first = 1\nsecond = 2\n# ... existing code ...\nthird = 3\n"
    ids = encode_text(tokenizer, update)
    risky, stops = snippet_risk(tokenizer, ids, newline_ids(tokenizer, ids))
    spans = line_spans(ids, newline_ids(tokenizer, ids))
    assert stops == {spans[2][0]}  # the marker line's first token
    assert spans[2][0] - 1 in risky and not risky & set(range(spans[1][0], spans[1][1] - 1))
    plan = plan_edit(tokenizer, ORIGINAL, update)
    drafter = make_drafter("fastapply", plan.context)
    snippet = next(s for s in drafter.sources if s.name == "snippet")
    snippet.pointer = 0
    assert snippet.propose(100) == ids[:spans[2][0]]
    snippet.pointer = spans[2][0]
    assert not snippet.live() and snippet.propose(5) == []


def test_calm_flags_follow_the_pointer(tokenizer):
    update = "# ... existing code ...\nvalue_3 = compute(3)\nadded = 1\nvalue_4 = compute(4)\n# ... existing code ...\n"
    plan = plan_edit(tokenizer, ORIGINAL, update)
    drafter = make_drafter("fastapply", plan.context)
    draft = drafter.propose([], 400)
    assert len(drafter.calm) == len(draft) == len(plan.context.prediction_ids)
    risky = plan.context.risk["prediction"]
    assert drafter.calm == [i not in risky for i in range(len(draft))]
    assert drafter.calm[0] and not all(drafter.calm)
