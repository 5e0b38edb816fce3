"""Known-answer tests of the draft sources, on plain integer token lists."""

import pytest

from fastapply.baselines import NgramDrafter, PromptLookupDrafter
from fastapply.draft import (
    DraftContext,
    HistoryLookup,
    PointerSource,
    SpecEditsDrafter,
    make_drafter,
)
from fastapply.errors import UsageError

NL = 99  # a "line break" token


def follow_all(source, out):
    """Feed ``out`` to the source one token at a time, as passes of one token would."""
    for i in range(1, len(out) + 1):
        source.follow(out[i - 1:i], out[:i])


def test_pointer_follows_a_verbatim_copy():
    src = PointerSource("prediction", [1, 2, 3, 4, 5, 6])
    follow_all(src, [1, 2, 3])
    assert src.pointer == 3 and src.propose(2) == [4, 5]


def test_resync_after_an_insertion():
    # original 10 11 12 13 14 15 16 17; the output inserts 50 51 after 12 and goes on with 13 14 15
    src = PointerSource("prediction", [10, 11, 12, 13, 14, 15, 16, 17])
    follow_all(src, [10, 11, 12, 50, 51])
    assert src.pointer is None  # nothing ending in "12 50 51" exists
    follow_all(src, [10, 11, 12, 50, 51, 13, 14, 15])
    assert src.pointer == 6 and src.propose(5) == [16, 17]


def test_resync_after_a_deletion_skips_the_deleted_code():
    src = PointerSource("prediction", [1, 2, 3, 4, 5, 6, 7, 8, 9])
    follow_all(src, [1, 2, 6, 7, 8])  # 3 4 5 deleted
    assert src.pointer == 8 and src.propose(3) == [9]


def test_resync_after_a_replacement():
    src = PointerSource("prediction", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    follow_all(src, [1, 2, 3, 40, 41, 6, 7, 8])  # 4 5 replaced by 40 41
    assert src.pointer == 8 and src.propose(2) == [9, 10]


def test_repeated_lines_resync_to_the_nearest_occurrence_at_or_after_the_pointer():
    # the line "7 8 9 NL" appears three times; the output has copied up to the second one
    tokens = [7, 8, 9, NL, 1, 1, 7, 8, 9, NL, 2, 2, 7, 8, 9, NL, 3, 3]
    src = PointerSource("prediction", tokens, frozenset({NL}))
    out = [7, 8, 9, NL, 1, 1, 7, 8, 9, NL, 2]
    follow_all(src, out)
    assert src.pointer == 11
    # the model writes a new line 55, then "7 8 9 NL" again: the third occurrence (after the pointer)
    # is the match, not the first (leftmost) nor the second
    out2 = out + [2, 55, 7, 8, 9, NL]
    follow_all(src, out2)
    assert src.pointer == 16 and src.propose(2) == [3, 3]


def test_longest_suffix_beats_nearest():
    # "5 6 7" occurs twice; only the first is preceded by 4 as in the output
    tokens = [4, 5, 6, 7, 8, 0, 0, 1, 5, 6, 7, 9]
    src = PointerSource("prediction", tokens)
    src.pointer, src._last_pointer = None, 9
    src.resync([4, 5, 6, 7])
    assert src.pointer == 4 and src.run == 4


def test_line_break_alone_can_resync_when_no_three_tokens_match():
    tokens = [1, 2, NL, 3, 4, NL, 5, 6]
    src = PointerSource("prediction", tokens, frozenset({NL}))
    src._last_pointer = 4
    src.resync([70, 71, NL])
    assert src.pointer == 6  # nearest line break at or after the old pointer


def test_end_of_file_proposes_nothing_past_the_end():
    src = PointerSource("prediction", [1, 2, 3, 4])
    follow_all(src, [1, 2, 3, 4])
    assert src.propose(10) == []


def test_spec_edits_drafter_prefers_the_snippet_for_inserted_code():
    prediction = [1, 2, 3, 4, 5, 6, 7, 8]
    snippet = [3, 4, 60, 61, 62, 63, 64, 5, 6]
    drafter = SpecEditsDrafter(DraftContext(prompt_ids=[], prediction_ids=prediction, snippet_ids=snippet))
    out = [1, 2, 3, 4, 60]
    for i in range(1, len(out) + 1):
        drafter.update(out[:i], 0)
    assert drafter.propose(out, 3) == [61, 62, 63] and drafter.source == "snippet"
    out = out + [61, 62, 63, 64, 5]
    drafter.update(out, 3)
    # both sources now match; the snippet's run is longer, and it continues into the original code
    assert drafter.propose(out, 2) == [6]


def test_a_snippet_draft_goes_on_past_a_marker_with_the_original_after_its_context():
    prediction = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    snippet = [2, 3, 50, 51, 3, 4, 5, 77, 78]  # a new line 50 51, context 3 4 5, then a marker (77 78)
    drafter = SpecEditsDrafter(DraftContext(prompt_ids=[], prediction_ids=prediction, snippet_ids=snippet,
                                            snippet_markers=frozenset({7})))
    out = [1, 2, 3, 50]
    for i in range(1, len(out) + 1):
        drafter.update(out[:i], 0)
    # the snippet stops before its marker; the answer goes back to the original there, after "3 4 5",
    # and the draft says so in the same pass, the seam counted risky
    assert drafter.propose(out, 10) == [51, 3, 4, 5, 6, 7, 8, 9] and drafter.source == "snippet"
    assert drafter.calm == [True] * 4 + [False] + [True] * 3
    assert drafter.propose(out, 3) == [51, 3, 4]  # a draft that k cuts short crosses no seam


def test_spec_edits_drafter_drafts_the_merged_prediction_first():
    original = [1, 2, 3, 4, 5]
    merged = [1, 2, 30, 31, 4, 5]
    drafter = SpecEditsDrafter(DraftContext(prompt_ids=[], prediction_ids=original, merged_ids=merged))
    drafter.update([1], 0)
    assert drafter.propose([1], 10) == [2, 30, 31, 4, 5] and drafter.source == "merged"


def test_prompt_lookup_takes_the_leftmost_match_of_the_last_two_tokens():
    prompt = [1, 2, 3, 9, 1, 2, 4, 9]
    drafter = PromptLookupDrafter(DraftContext(prompt_ids=prompt, prediction_ids=[]), num_tokens=3)
    assert drafter.propose([1, 2], 50) == [3, 9, 1]


def test_ngram_takes_the_longest_match_then_the_earliest():
    prompt = [5, 1, 2, 7, 0, 3, 1, 2, 8, 0]
    drafter = NgramDrafter(DraftContext(prompt_ids=prompt, prediction_ids=[]), min_n=1, max_n=3)
    # suffix "3 1 2" matches once (longest) -> 8; "1 2" alone would give 7 (earliest)
    assert drafter.propose([3, 1, 2], 2) == [8, 0]
    assert NgramDrafter(DraftContext(prompt_ids=prompt, prediction_ids=[]), max_n=2).propose([1, 2], 2) == [7, 0]


def test_unknown_policy_lists_the_valid_ones():
    with pytest.raises(UsageError, match="fastapply, none, pld, ngram, draft-model, medusa"):
        make_drafter("lookahead", DraftContext(prompt_ids=[], prediction_ids=[]))


def test_a_model_policy_without_its_model_says_which_option_it_needs():
    with pytest.raises(UsageError, match="needs --medusa PATH"):
        make_drafter("fastapply+medusa", DraftContext(prompt_ids=[], prediction_ids=[]))


def test_fastapply_with_a_model_fallback_drafts_from_it_only_where_no_pointer_or_history_predicts():
    """The model-run drafter comes after fastapply's own sources (DESIGN §4), the output's history
    included: an answer that loops is drafted from its history with a fallback given as without one."""
    class Nines:  # a model-run drafter that always proposes 9s
        source = "draft-model"

        def propose(self, out, k):
            return [9] * k

        def update(self, out, n_accepted):
            pass

    fallback = Nines()
    context = DraftContext(prompt_ids=[], prediction_ids=[1, 2, 3])
    drafter = make_drafter("fastapply+draft-model", context, {"draft-model": lambda ctx, target: fallback})
    assert drafter.propose([], 2) == [1, 2] and drafter.source == "prediction"
    drafter.update([7, 8, 4, 6], 0)  # off the prediction, no re-sync point, nothing repeated
    assert drafter.propose([7, 8, 4, 6], 2) == [9, 9] and drafter.source == "draft-model"
    drafter.update([7, 8, 4, 6, 7, 8, 4], 0)  # the answer repeats itself
    assert drafter.propose([7, 8, 4, 6, 7, 8, 4], 2) == [6, 7] and drafter.source == "history"


BLOCK = list(range(100, 140))  # 40 tokens the answer repeats


def test_history_echo_is_how_long_the_output_repeats_itself():
    history = HistoryLookup()
    assert history.echo([1, 2, 3]) == 0 and history.propose([1, 2, 3], 5) == []
    out = [1, 2, 3, 4, 5, 9, 2, 3, 4]
    assert history.propose(out, 5) == [5, 9, 2, 3, 4] and history.echo(out) == 3
    assert history.propose(out, 8) == [5, 9, 2, 3, 4, 5, 9, 2]  # and on, as if it repeated once more
    loop = [7, *BLOCK, *BLOCK, *BLOCK[:5]]
    assert history.propose(loop, 3) == BLOCK[5:8] and history.echo(loop) == 45


def test_an_answer_that_loops_is_drafted_from_its_own_history():
    """The answer copies a block of the original again and again: the original's pointer can only
    re-sync into the block's one copy each time round, the output's own history drafts the loop on."""
    original = [*range(1, 11), *BLOCK, *range(11, 21)]
    drafter = SpecEditsDrafter(DraftContext(prompt_ids=[], prediction_ids=original))
    answer = [*range(1, 11), *BLOCK * 6]
    sources = []
    for i in range(1, len(answer)):
        drafter.update(answer[:i], 0)
        proposal = drafter.propose(answer[:i], 50)
        sources.append(drafter.source)
        if drafter.source == "history":
            assert proposal == [*answer, *BLOCK * 2][i:i + 50]  # the loop, drafted on past the answer's end
    first_history = sources.index("history")
    assert first_history >= 10 + 2 * len(BLOCK)  # not before the block has come round twice
    assert set(sources[:10 + len(BLOCK)]) == {"prediction"}
    assert sources[-len(BLOCK):] == ["history"] * len(BLOCK)


def test_drafting_a_loop_from_history_takes_fewer_passes(monkeypatch):
    """A loop that stitches two parts of the original: the pointer re-syncs twice each time round, the
    history drafts several rounds in one pass."""
    from fastapply import draft
    from fastapply.decode import speculative_generate
    from fastapply.replay import ReplayTarget

    first, second = BLOCK[:20], BLOCK[20:]
    original = [*range(1, 11), *first, *range(11, 21), *second, *range(21, 31), 999]
    answer = [*range(1, 11), *(first + second) * 20, 999]
    passes = {}
    for name, echo in (("echo", draft.MAX_ECHO), ("none", 0)):
        monkeypatch.setattr(draft, "MAX_ECHO", echo)
        drafter = SpecEditsDrafter(DraftContext(prompt_ids=[], prediction_ids=original))
        out, stats = speculative_generate(ReplayTarget(answer, 999), drafter, [0], 1000, stop_ids={999})
        assert out == answer
        passes[name] = stats.passes
    assert passes["echo"] < passes["none"]
