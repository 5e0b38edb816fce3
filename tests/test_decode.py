"""The speculative loop is lossless: token for token what plain greedy decoding gives, and for
sampling the model's own distribution."""

import contextlib
import dataclasses
import itertools
import json
import math
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import torch

from fastapply import costs
from fastapply.apply import plan_edit, run_plan
from fastapply.choices import LOGIT_CHUNK
from fastapply.costs import CALIBRATION_SIZES, verify_costs_path
from fastapply.decode import PROBE_EVERY, speculative_generate
from fastapply.draft import POLICIES, DraftContext, SpecEditsDrafter, make_drafter
from fastapply.draftlen import AcceptanceTracker, calm_key, choose_draft_length
from fastapply.loading import load_model
from fastapply.prompt import answer_ids
from fastapply.replay import ReplayTarget
from fastapply.snippet import make_snippet
from fastapply.target import HFTarget
from fastapply.validate import RefusalWatch, validate
from finetune.scratch import new_llama
from tests.samples import SAMPLE_EXPECTED, SAMPLE_PY, SAMPLE_UPDATE, SMALL_PY

JS_FILE = """\
export function total(items) {
  let sum = 0;
  for (const item of items) {
    sum += item.price * item.count;
  }
  return sum;
}

export function label(item) {
  return `${item.name} (${item.count})`;
}
"""
JS_UPDATE = """\
// ... existing code ...
export function label(item) {
  const name = item.name.trim();
  return `${name} (${item.count})`;
}
"""
CASES = [
    (SAMPLE_PY, SAMPLE_UPDATE, ""),
    (JS_FILE, JS_UPDATE, "Trim the name."),
    ("x = 1\n", "x = 2\n", ""),
]


def greedy_reference(model, tokenizer, prompt_ids, max_new_tokens):
    out = model.generate(torch.tensor([prompt_ids]), attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                         max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    return out[0, len(prompt_ids):].tolist()


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_speculative_greedy_equals_generate(tiny_model, policy, case):
    model, tokenizer = tiny_model
    original, update, instruction = CASES[case]
    plan = plan_edit(tokenizer, original, update, instruction)
    expected = greedy_reference(model, tokenizer, plan.prompt_ids, 96)
    result = run_plan(HFTarget(model), tokenizer, plan, policy, 96, {tokenizer.eos_token_id})
    assert result.token_ids == expected


def test_a_rewrite_passes_the_cache_under_the_keyword_the_installed_transformers_takes(tiny_checkpoint):
    """transformers 5.24 renamed a forward's ``past_key_values`` to ``cache`` (the old name warns, and a
    later 5.x drops it: the cache would go unread). A rewrite, bare and under an adapter, warns of
    nothing and gives plain greedy decoding's tokens."""
    import warnings

    from peft import LoraConfig, get_peft_model

    model, _ = load_model(str(tiny_checkpoint), device="cpu", dtype="float32")
    prompt = [5, 17, 3, 99, 42, 8, 250, 11]
    expected = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=12, min_new_tokens=12,
                              pad_token_id=0)[0, len(prompt):].tolist()
    with warnings.catch_warnings():  # peft asks for `is_gradient_checkpointing`, which transformers 5 deprecates
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
        wrapped = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))  # B = 0: the same model
    for lm in (wrapped.get_base_model(), wrapped):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            drafter = make_drafter("fastapply", DraftContext(prompt_ids=prompt, prediction_ids=expected[:6]))
            out, stats = speculative_generate(HFTarget(lm), drafter, prompt, 12)
        assert out == expected and stats.passes < 11


def test_speculative_greedy_equals_generate_when_the_draft_is_right(sample_model):
    """With a model that copies, long drafts are accepted: the output must still equal generate's."""
    model, tokenizer, _ = sample_model
    plan = plan_edit(tokenizer, SMALL_PY, SMALL_PY.replace("config = {}", "config = dict()"))
    expected = greedy_reference(model, tokenizer, plan.prompt_ids, 400)
    result = run_plan(HFTarget(model), tokenizer, plan, "fastapply", 400, {tokenizer.eos_token_id})
    assert result.token_ids == expected[:len(result.token_ids)]
    assert len(result.token_ids) == len(expected) or result.token_ids[-len(plan.stop_sequences[0]):] == list(
        plan.stop_sequences[0])
    assert result.stats.tokens_per_pass > 2


class FixedDraft:
    """Always proposes the same tokens: a deterministic draft for the sampling test."""

    source = "fixed"

    def __init__(self, tokens):
        self.tokens = tokens

    def propose(self, out, k):
        return self.tokens[:k]

    def update(self, out, n):
        pass


class FlatCostTarget(HFTarget):
    """Verifying costs the same whatever the draft length, so the loop always drafts."""

    def cost(self, k):
        return 1.0


class ArgmaxRuleTarget(FlatCostTarget):
    """A WRONG acceptance rule for sampling: keeps a draft token whenever it is the model's argmax."""

    _fed = [None]  # the prefill has no draft

    def verify(self, draft):
        self._fed = [self.pending, *draft]
        return super().verify(draft)

    def _choose(self, logits):
        sampled = super()._choose(logits)
        best = logits.argmax(-1).tolist()
        drafted = self._fed[1:] + [None] * (len(sampled) - len(self._fed) + 1)
        return [d if d == b else s for s, b, d in zip(sampled, best, drafted)]


VOCAB = 4
LENGTH = 3  # tokens sampled per run: outcomes are VOCAB ** LENGTH sequences


@pytest.fixture(scope="module")
def sharp_model():
    """A tiny Llama over 4 tokens with position-dependent distributions, neither flat nor one-hot."""
    model = new_llama(VOCAB, "tiny", seed=3)
    with torch.no_grad():
        model.lm_head.weight.mul_(3.0)
    return model


def exact_distribution(model, prompt):
    """P(sequence) for every sequence of LENGTH tokens, from the model's own conditionals."""
    probs = {}
    with torch.no_grad():
        for seq in itertools.product(range(VOCAB), repeat=LENGTH):
            ids = torch.tensor([prompt + list(seq)])
            logp = torch.log_softmax(model(ids).logits[0].float(), -1)
            probs[seq] = math.exp(sum(logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(seq)))
    return probs


def sample_counts(model, prompt, draft, target_cls, runs):
    counts = {}
    for seed in range(runs):
        out, stats = speculative_generate(target_cls(model, temperature=1.0, seed=seed), FixedDraft(draft),
                                          prompt, LENGTH)
        assert stats.proposed[0] == 1  # the first pass verified the drafted token
        counts[tuple(out)] = counts.get(tuple(out), 0) + 1
    return counts


def chi_square_p(counts, probs, runs):
    """p-value of Pearson's chi-square test, cells with small expectation pooled."""
    from scipy.stats import chi2

    stat, pooled_obs, pooled_exp, cells = 0.0, 0, 0.0, 0
    for seq, p in probs.items():
        expected, observed = p * runs, counts.get(seq, 0)
        if expected < 5:
            pooled_obs += observed
            pooled_exp += expected
            continue
        stat += (observed - expected) ** 2 / expected
        cells += 1
    if pooled_exp > 0:
        stat += (pooled_obs - pooled_exp) ** 2 / pooled_exp
        cells += 1
    return chi2.sf(stat, cells - 1)


def test_speculative_sampling_keeps_the_model_distribution(sharp_model):
    prompt = [0, 1]
    probs = exact_distribution(sharp_model, prompt)
    # draft the most likely second token: the wrong rule below then accepts it too often
    second = max(range(VOCAB), key=lambda t: sum(p for seq, p in probs.items() if seq[1] == t))
    runs = 800
    right = sample_counts(sharp_model, prompt, [second], FlatCostTarget, runs)
    assert chi_square_p(right, probs, runs) > 1e-3
    # the same test rejects a wrong acceptance rule: it has the power to catch one
    wrong = sample_counts(sharp_model, prompt, [second], ArgmaxRuleTarget, runs)
    assert chi_square_p(wrong, probs, runs) < 1e-3


def stdlib_file(name, lines):
    text = (Path(sysconfig.get_paths()["stdlib"]) / name).read_text()
    return "".join(text.splitlines(keepends=True)[:lines])


def test_pointer_drafter_needs_three_times_fewer_passes_than_prompt_lookup(tokenizer):
    original = stdlib_file("argparse.py", 300)
    lines = original.splitlines(keepends=True)
    edited = "".join(lines[:150] + ["    # parsing starts here\n"] + lines[150:])
    plan = plan_edit(tokenizer, original, make_snippet(original, edited, "python"))
    reference = answer_ids(tokenizer, plan.preset, edited)
    passes, result_tokens = {}, {}
    for policy in ("fastapply", "pld", "ngram", "none"):
        result = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, policy)
        assert result.text == edited and result.closed
        passes[policy] = result.stats.passes
        result_tokens[policy] = result.stats.tokens
    assert passes["none"] == result_tokens["none"] - 1  # plain decoding: one token per pass
    assert passes["fastapply"] * 3 <= passes["pld"]
    assert passes["fastapply"] < passes["ngram"]


def test_budget_is_never_exceeded(tiny_model):
    model, tokenizer = tiny_model
    plan = plan_edit(tokenizer, SAMPLE_PY, SAMPLE_UPDATE)
    for budget in (1, 2, 7):
        result = run_plan(HFTarget(model), tokenizer, plan, "fastapply", budget)
        assert len(result.token_ids) <= budget and not result.closed


def test_draft_length_grows_with_acceptance_and_cheap_passes():
    flat = lambda k: 1.0 + 0.001 * k  # noqa: E731  a GPU-like cost
    steep = lambda k: 1.0 + 0.2 * k  # noqa: E731  every token costs
    assert choose_draft_length(flat, 0.99, 512) >= 256
    assert choose_draft_length(flat, 0.5, 512) <= 16
    assert choose_draft_length(steep, 0.99, 512) < choose_draft_length(flat, 0.99, 512)
    assert choose_draft_length(flat, 0.99, 37) == 37


def test_a_rejection_in_calm_code_and_one_at_a_likely_edit_are_counted_apart():
    tracker = AcceptanceTracker()
    calm_before, risky_before = tracker.rate(calm_key("prediction")), tracker.rate("prediction")
    tracker.observe("prediction", 20, 11, [True] * 10 + [False] * 10)  # left on a risky token
    assert tracker.rate(calm_key("prediction")) > calm_before and tracker.rate("prediction") < risky_before
    tracker = AcceptanceTracker()
    tracker.observe("prediction", 20, 5, [True] * 10 + [False] * 10)  # left in calm code
    assert tracker.rate(calm_key("prediction")) < calm_before
    assert tracker.rate("prediction") == risky_before  # its risky tokens were never reached


def test_drafts_stop_at_a_likely_edit_and_go_through_unchanged_code():
    cpu = lambda k: 1.0 + k / 30  # a pass costs as much as 30 more draft tokens
    calm = [True] * 200 + [False] * 8 + [True] * 300
    # however recent acceptance has gone, the draft ends at the edit's line, not in the code after it
    for rate in (0.5, 0.9, 0.99):
        assert choose_draft_length(cpu, rate, 508, calm, calm_rate=0.9995) in (200, 208)
    # after the edit: the rest in one pass
    assert choose_draft_length(cpu, 0.5, 300, [True] * 300, calm_rate=0.9995) == 300


def test_knowing_where_the_edit_is_saves_time_through_a_long_file(tokenizer):
    """A 120-line file with one line added, replayed with a CPU-shaped pass cost: drafts that know
    where the edit is waste little there and take less time than the same loop blind to it."""
    original = "".join(f"result_{i} = transform(source_{i}, factor={i})\n" for i in range(120))
    update = "# ... existing code ...\nresult_44 = transform(source_44, factor=44)\nprint(result_44)\n" \
             "result_45 = transform(source_45, factor=45)\n# ... existing code ...\n"
    expected = original.replace("result_45 =", "print(result_44)\nresult_45 =", 1)

    class CpuReplay(ReplayTarget):
        def cost(self, k):
            return 1.0 + k / 30

    plan = plan_edit(tokenizer, original, update)
    reference = answer_ids(tokenizer, plan.preset, expected)
    runs = {}
    for name, context in {"informed": plan.context, "blind": dataclasses.replace(plan.context, risk={})}.items():
        target = CpuReplay(reference, tokenizer.eos_token_id)
        runs[name] = run_plan(target, tokenizer, dataclasses.replace(plan, context=context), "fastapply", trees=False)
        assert runs[name].text == expected
    seconds = {name: sum(1.0 + k / 30 for k in run.stats.proposed) for name, run in runs.items()}
    wasted = {name: sum(run.stats.proposed) - sum(run.stats.accepted) for name, run in runs.items()}
    assert seconds["informed"] < seconds["blind"] and runs["informed"].stats.passes < runs["blind"].stats.passes
    assert wasted["informed"] <= 30 < wasted["blind"]  # at most part of the edit's line


def test_stop_sequence_ends_the_answer(tokenizer):
    plan = plan_edit(tokenizer, SAMPLE_PY, SAMPLE_UPDATE)
    # the reference keeps going after the closing tag: decoding must stop at the tag
    reference = answer_ids(tokenizer, plan.preset, SAMPLE_EXPECTED)[:-1] + [5, 6, 7, 8]
    result = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply")
    assert result.closed and result.text == SAMPLE_EXPECTED
    assert tuple(result.token_ids[-len(plan.stop_sequences[0]):]) == plan.stop_sequences[0]


def test_an_answer_sure_to_be_refused_stops_once_it_is_and_a_good_one_runs_unchanged(tokenizer):
    # the model writes the edit, then loops on one of its new lines until its budget ends
    plan = plan_edit(tokenizer, SAMPLE_PY, SAMPLE_UPDATE)
    loop_from = SAMPLE_EXPECTED.index("        print(key, config[key])\n")
    looping = SAMPLE_EXPECTED[:loop_from] + '            print("reading", key)\n' * 150
    reference = answer_ids(tokenizer, plan.preset, looping)[:-2]  # no closing tag, no EOS
    whole = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply", len(reference))
    watch = RefusalWatch(SAMPLE_PY, SAMPLE_UPDATE, "python")
    cut = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply", len(reference),
                   watch=watch)
    assert whole.stopped is None and whole.text.count('print("reading", key)') == 151 and not whole.closed
    assert cut.stopped is watch.problem and cut.stopped.name == "unasked-change"
    assert 'print("reading", key)' in cut.stopped.message and not cut.closed
    assert cut.token_ids == whole.token_ids[:len(cut.token_ids)]
    assert cut.text.count('print("reading", key)') <= 20 and cut.stats.tokens < whole.stats.tokens / 4
    assert "unasked-change" in [p.name for p in validate(SAMPLE_PY, whole.text, SAMPLE_UPDATE, "python")]
    # the right answer: nothing found, the same tokens and passes as without a watch
    reference = answer_ids(tokenizer, plan.preset, SAMPLE_EXPECTED)
    plain = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply")
    watch = RefusalWatch(SAMPLE_PY, SAMPLE_UPDATE, "python")
    watched = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply", watch=watch)
    assert watched.stopped is None and watch.problem is None and watched.closed
    assert watched.token_ids == plain.token_ids and watched.stats.accepted == plain.stats.accepted


def test_the_watch_reads_the_answers_lines_whole_with_a_tokenizer_that_drops_a_spans_opening_space():
    """SentencePiece-style decoders drop the space that opens a decoded span ("▁▁▁▁return" alone reads
    "   return"): AnswerLines must still hand the watch each line as the whole answer has it, however
    the tokens arrive."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from fastapply.apply import AnswerLines
    from fastapply.prompt import get_preset

    spm = Tokenizer(models.BPE(unk_token="<unk>"))
    spm.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    spm.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
    preset = get_preset("default")
    answer = preset.answer_open + SAMPLE_PY
    spm.train_from_iterator([answer] * 20, trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=spm, eos_token="</s>")
    ids = tokenizer.encode(answer)
    assert tokenizer.decode(ids) == answer
    assert any(tokenizer.decode(ids[:i]) + tokenizer.decode(ids[i:]) != answer for i in range(1, len(ids)))

    class Reader:
        problem = None

        def __init__(self):
            self.seen = []

        def lines(self, lines):
            self.seen += lines

    for step in (1, 3, 7):
        reader = Reader()
        answer = AnswerLines(tokenizer, preset, reader)
        for end in range(step, len(ids) + step, step):
            assert not answer(ids[:end])
        assert reader.seen == SAMPLE_PY.split("\n")[:-1], step


def test_draft_tokens_accepted_past_the_stop_are_not_counted(tokenizer):
    # the merged prediction ends with the closing tag and EOS: the last pass accepts the answer's end, EOS
    # included, but decoding stops at the tag, so EOS is neither written nor counted (nor the pass's own
    # token after it)
    plan = plan_edit(tokenizer, SAMPLE_PY, SAMPLE_UPDATE, merged=SAMPLE_EXPECTED)
    reference = answer_ids(tokenizer, plan.preset, SAMPLE_EXPECTED)
    result = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply")
    assert result.closed and result.text == SAMPLE_EXPECTED
    assert result.token_ids == reference[:-1]  # up to the closing tag
    stats = result.stats
    assert sum(stats.accepted) == sum(stats.sources.values()) == stats.tokens - stats.passes + 1


def test_closing_tag_inside_the_file_does_not_stop_decoding(tokenizer):
    original = 'TEMPLATE = "</updated-code>"\nx = 1\n'
    edited = original.replace("x = 1", "x = 2")
    plan = plan_edit(tokenizer, original, "x = 2\n")
    assert plan.stop_sequences == ()
    reference = answer_ids(tokenizer, plan.preset, edited)
    result = run_plan(ReplayTarget(reference, tokenizer.eos_token_id), tokenizer, plan, "fastapply")
    assert result.closed and result.text == edited


def test_drafter_context_holds_the_snippet_and_line_breaks(tokenizer):
    plan = plan_edit(tokenizer, SAMPLE_PY, SAMPLE_UPDATE, merged=SAMPLE_EXPECTED)
    assert isinstance(plan.context, DraftContext)
    assert plan.context.snippet_ids and plan.context.merged_ids
    assert all("\n" in tokenizer.decode([i]) for i in plan.context.newline_ids)
    assert make_drafter("fastapply", plan.context).sources[0].name == "merged"


def test_a_model_that_copies_accepts_most_of_the_draft(sample_model):
    """HFTarget with a model trained to copy: on a copy-heavy edit most drafted tokens are accepted."""
    model, tokenizer, _ = sample_model
    edited = SMALL_PY.replace("    config = {}\n", "    config = {}  # parsed values\n")
    update = make_snippet(SMALL_PY, edited, "python", context=2)
    plan = plan_edit(tokenizer, SMALL_PY, update)
    result = run_plan(HFTarget(model), tokenizer, plan, "fastapply", 400, {tokenizer.eos_token_id})
    assert result.closed
    assert result.stats.acceptance > 0.5
    assert result.stats.passes * 3 < result.stats.tokens


class _Steep(ReplayTarget):
    """A replay whose every drafted token costs ten passes: no draft pays for itself."""

    def cost(self, k):
        return 1.0 + 10.0 * k


class _WrongModel:
    """A model-run drafter (``costly``) that is always wrong; counts how often it is asked."""

    source, costly = "draft-model", True

    def __init__(self):
        self.asked = 0

    def propose(self, out, k):
        self.asked += 1
        return [0] * min(k, 4)

    def update(self, out, n_accepted):
        pass


def test_a_draft_that_seems_too_dear_is_still_tried_one_token_at_a_time(tokenizer):
    """Where one drafted token costs more than it is expected to give, passes verify none, but every
    ``PROBE_EVERY``-th still tries one: the loop must not stop learning that the draft is right."""
    plan = plan_edit(tokenizer, SAMPLE_PY, SAMPLE_UPDATE)
    reference = answer_ids(tokenizer, plan.preset, SAMPLE_EXPECTED)

    result = run_plan(_Steep(reference, tokenizer.eos_token_id), tokenizer, plan, "pld")
    assert result.text == SAMPLE_EXPECTED
    probes = [i for i, proposed in enumerate(result.stats.proposed) if proposed]
    assert {result.stats.proposed[i] for i in probes} == {1}
    assert len(probes) >= 3 and all(b - a >= PROBE_EVERY for a, b in itertools.pairwise(probes))
    assert result.stats.passes < result.stats.tokens - 1  # some of them accepted


@pytest.mark.parametrize("composite", [False, True], ids=["alone", "fastapply-fallback"])
def test_a_costly_drafter_whose_drafts_are_declined_is_asked_only_to_probe(composite):
    """A drafter that runs a model (``costly``) and is always wrong: after its first draft is declined it
    is asked once every ``PROBE_EVERY`` passes (and right after a probe), not every pass; the same as
    fastapply's fallback where no pointer source is live (``fastapply+draft-model``)."""
    reference = list(range(10, 90)) + [2]
    model = _WrongModel()
    drafter = model
    if composite:  # the pointer sources lose the answer at once and never find it again
        drafter = SpecEditsDrafter(DraftContext(prompt_ids=[1], prediction_ids=[500, 501, 502, 2]), model)
    out, stats = speculative_generate(_Steep(reference, 2), drafter, [1], 200, stop_ids={2})
    assert out == reference
    opening = 1 if composite else 0  # the pointer sources' guess at the opening, in the prompt's pass
    assert stats.passes == len(reference) - 1 + opening and sum(stats.accepted) == 0
    probes = sum(1 for proposed in stats.proposed[opening:] if proposed)
    assert probes == (stats.passes - opening) // PROBE_EVERY
    assert model.asked <= 2 * probes + 1


def test_fastapply_with_a_costly_fallback_is_costly_only_where_no_pointer_is_live():
    drafter = SpecEditsDrafter(DraftContext(prompt_ids=[1], prediction_ids=[5, 6, 7, 2]), _WrongModel())
    assert not drafter.costly  # the prediction's pointer proposes: the model is not run
    drafter.update([9], 0)
    assert drafter.costly
    drafter.update([9, 4, 3, 8, 9, 4, 3], 0)
    assert not drafter.costly  # the output repeats itself: its history drafts, not the model
    assert not SpecEditsDrafter(DraftContext(prompt_ids=[1], prediction_ids=[5, 2])).costly  # history fallback


def test_verify_costs_are_measured_once_and_again_when_the_sizes_change(tiny_model, monkeypatch):
    """The first request times a verify of each of ``CALIBRATION_SIZES`` and caches them; later targets
    of the same model read the cache, unless it holds other sizes (an older fastapply's)."""
    model, _ = tiny_model
    path = verify_costs_path()

    def fresh_target():
        target = HFTarget(model, model_key="tiny-costs")
        target.prefill([1, 2, 3, 4, 5])
        return target

    fresh_target().cost(1)
    table = json.loads(path.read_text())
    (key, entry), = table.items()
    points = entry["points"]
    assert [k for k, _ in points] == list(CALIBRATION_SIZES)
    assert all(later >= earlier > 0 for (_, earlier), (_, later) in itertools.pairwise(points))
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".fastapply-tmp")] == []  # replaced whole

    measured = []
    real_measure = HFTarget._measure
    monkeypatch.setattr(HFTarget, "_measure", lambda self, k: measured.append(k) or real_measure(self, k))
    assert fresh_target().cost(4) == pytest.approx(dict(points)[4]) and measured == []
    path.write_text(json.dumps({key: {**entry, "points": [p for p in points if p[0] not in (1, 2, 4)]}}))
    fresh_target().cost(4)
    assert measured == list(CALIBRATION_SIZES) * 4  # a sweep that warms up, then three timed sweeps
    assert [k for k, _ in json.loads(path.read_text())[key]["points"]] == list(CALIBRATION_SIZES)

    measured.clear()  # costs timed another way (an older fastapply's) are timed again
    monkeypatch.setattr(costs, "COST_TIMING", costs.COST_TIMING + 1)
    fresh_target().cost(4)
    assert measured == list(CALIBRATION_SIZES) * 4 and len(json.loads(path.read_text())) == 2


def test_verify_costs_keep_each_size_fastest_timed_sweep_not_the_warm_up(tiny_model, monkeypatch):
    """A busy moment slows the timings taken in it: each size keeps its fastest of the timed sweeps, which
    lie a whole sweep apart, and the warm-up sweep's timings are never kept."""
    model, _ = tiny_model
    sweep_times = iter([[0.001] * len(CALIBRATION_SIZES),  # the warm-up: fast here, and ignored
                        [0.5] * 2 + [0.02 * (i + 1) for i in range(2, len(CALIBRATION_SIZES))],  # busy at first
                        [0.03 * (i + 1) for i in range(len(CALIBRATION_SIZES))],
                        [0.9] * len(CALIBRATION_SIZES)])
    timings = iter(t for sweep in sweep_times for t in sweep)
    monkeypatch.setattr(HFTarget, "_measure", lambda self, k: next(timings))
    target = HFTarget(model, model_key="tiny-sweeps")
    target.prefill([1, 2, 3, 4, 5])
    expected = [min(0.5 if i < 2 else 0.02 * (i + 1), 0.03 * (i + 1)) for i in range(len(CALIBRATION_SIZES))]
    assert target.cost(0) == pytest.approx(expected[0])
    (entry,) = json.loads(verify_costs_path().read_text()).values()
    assert [s for _, s in entry["points"]] == pytest.approx(expected)


@contextlib.contextmanager
def busy_cores(per_core: int = 3):
    """Processes that spin on every core this process may use, ``per_core`` to a core, while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(per_core * len(os.sched_getaffinity(0)))]
    try:
        time.sleep(0.5)  # started and spinning
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_verify_costs_timed_beside_other_work_are_timed_again_by_a_request_with_the_cpu_to_itself(monkeypatch):
    """Costs timed while other processes share the cores are stored with the small share of the CPU their
    timing had; a request that meets the cores still shared reads them, and the first whose prefill has
    the CPU to itself times them again and stores its own, which later requests read."""
    model = new_llama(300, "tiny", seed=4).eval()
    path = verify_costs_path()
    measured = []
    real_measure = HFTarget._measure
    monkeypatch.setattr(HFTarget, "_measure", lambda self, k: measured.append(k) or real_measure(self, k))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model's operations run on one thread: its share of one core is measured

    watch = costs.CpuShare("cpu")
    while watch.share() is None:
        model(torch.tensor([list(range(1, 200))]))
    if watch.share() < costs.SHARED_BELOW:
        torch.set_num_threads(threads)
        pytest.skip("other work shares this machine's CPU: no request here can have it to itself")

    def cost_of_a_request() -> float:
        target = HFTarget(model, model_key="tiny-shared")
        target.prefill([i % 299 + 1 for i in range(6000)])  # a prefill long enough to read its share
        return target.cost(8)

    try:
        with busy_cores():
            cost_of_a_request()
            (shared,) = json.loads(path.read_text()).values()
            assert shared["cpu_share"] < costs.SHARED_BELOW
            measured.clear()
            cost_of_a_request()
            assert measured == []  # still shared: the stored costs are as good as any timed now
        cost_of_a_request()
        assert measured == list(CALIBRATION_SIZES) * 4
        (alone,) = json.loads(path.read_text()).values()
        assert alone["cpu_share"] >= costs.SHARED_BELOW
        measured.clear()
        cost_of_a_request()
        assert measured == []
    finally:
        torch.set_num_threads(threads)


def test_a_verify_computes_logits_only_up_to_the_first_rejected_draft_token():
    """Past the first draft token the model rejects no choice is used: a verify of 40 drafted tokens
    rejected at the fourth runs the output layer on one chunk, and its choices are the full pass's."""
    model = new_llama(300, "tiny", seed=3).eval()
    prompt = [5, 17, 3, 99, 42, 8, 250, 11]
    plain = HFTarget(model)
    greedy = [plain.prefill(prompt)]
    for _ in range(4):
        greedy.append(plain.verify([])[0])
        plain.accept(0)
    draft = [*greedy[1:4], (greedy[4] + 1) % 300, *range(36)]

    full = HFTarget(model)
    full.prefill(prompt)
    every = list(full.verify(draft))
    assert len(every) == len(draft) + 1 and every[:4] == greedy[1:5]

    lazy = HFTarget(model)
    lazy.prefill(prompt)
    choices = lazy.verify(draft)
    assert len(choices) == len(draft) + 1 and choices.computed == 0
    n = next(i for i in range(len(draft)) if draft[i] != choices[i])
    assert n == 3 and choices[n] == greedy[4] and choices.computed == LOGIT_CHUNK
    assert list(choices) == every
    lazy.accept(n)
    assert lazy.cache.get_seq_length() == len(prompt) + 4 and lazy.pending == greedy[4]


@pytest.mark.parametrize("faster", [True, False])
def test_a_verify_screened_in_int8_chooses_what_float32_does(monkeypatch, faster):
    """Where the output layer's int8 screen measured faster (here: said to), a greedy verify reads the
    layer through ``screen.py`` (here at any size); its choices are those of the float32 layer at every
    position, drafted tokens right or wrong. Where it did not, the float32 layer is read."""
    from fastapply import screen
    from fastapply.screen import ScreenedArgmax

    model = new_llama(300, "tiny", seed=4).eval()
    monkeypatch.setattr(screen, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(screen, "PAYS_AFTER", 0)
    monkeypatch.setattr(ScreenedArgmax, "faster", property(lambda self: faster))
    prompt = [5, 17, 3, 99, 42, 8, 250, 11]
    draft = [(7 * i) % 300 for i in range(100)]
    screened, plain = HFTarget(model), HFTarget(model, screen_logits=False)
    for target in (screened, plain):
        target.prefill(prompt)
    assert list(screened.verify(draft)) == list(plain.verify(draft))
    assert isinstance(screened._screen, ScreenedArgmax) == faster and plain._screen is False
    assert screened._sample is None  # the prefill's hidden states went to the screen's channels, then away
    screened.cost(1)  # its verify costs are measured, and kept, apart from the float32 layer's
    assert any(key.endswith("|int8 screen") for key in json.loads((verify_costs_path()).read_text())) == faster


def test_the_screen_is_built_once_the_process_has_read_enough_positions_in_float32(monkeypatch):
    """A request reads its output layer in float32 until this process has read ``PAYS_AFTER`` positions
    that way; the requests after that are screened."""
    from fastapply import screen
    from fastapply.screen import ScreenedArgmax

    model = new_llama(300, "tiny", seed=5).eval()
    monkeypatch.setattr(screen, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(screen, "PAYS_AFTER", 150)
    monkeypatch.setattr(screen, "_SEEN", {})
    monkeypatch.setattr(ScreenedArgmax, "faster", property(lambda self: True))
    prompt, draft = [5, 17, 3, 99, 42, 8], [(11 * i) % 300 for i in range(100)]
    used = []
    for _ in range(3):
        target = HFTarget(model)
        target.prefill(prompt)
        list(target.verify(draft))  # 101 positions read
        used.append(isinstance(target._screen, ScreenedArgmax))
    assert used == [False, False, True]


def test_a_process_that_expects_many_requests_screens_from_the_first(monkeypatch):
    """A bench, an eval or a server says it will read many positions (``expect_many_requests``): its first
    request is screened, so the warm-up, not a timed request, builds the screen and measures its costs."""
    from fastapply import screen
    from fastapply.loading import expect_many_requests
    from fastapply.screen import ScreenedArgmax

    model = new_llama(300, "tiny", seed=5).eval()
    monkeypatch.setattr(screen, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(screen, "PAYS_AFTER", 10_000)
    monkeypatch.setattr(screen, "_SEEN", {})
    monkeypatch.setattr(ScreenedArgmax, "faster", property(lambda self: True))
    other = new_llama(300, "tiny", seed=6).eval()
    expect_many_requests(model)
    for each, screened in ((model, True), (other, False)):  # the other model's layer waits as before
        target = HFTarget(each)
        target.prefill([5, 17, 3, 99, 42, 8])
        list(target.verify([7, 14, 21]))
        assert isinstance(target._screen, ScreenedArgmax) == screened


@pytest.mark.filterwarnings("error::FutureWarning")  # its forward takes **kwargs: the cache keyword too
def test_a_model_that_changes_its_logits_after_the_output_layer_gets_every_position():
    """Where the logits are not the output layer's alone (scaled here), a verify runs the whole model."""
    from transformers import LlamaForCausalLM

    class Scaled(LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 2.0
            return out

    model = new_llama(300, "tiny", seed=3).eval()
    model.__class__ = Scaled
    target = HFTarget(model)
    target.prefill([5, 17, 3, 99])
    assert target._head_apart is False
    choices = target.verify([0] * 10)
    assert isinstance(choices, list) and len(choices) == 11


@pytest.mark.parametrize("chunk", [1024, 4])
def test_the_prompts_own_pass_verifies_the_answers_opening_as_a_pass_after_it_would(chunk):
    """``prefill_draft`` feeds the prompt (its last chunk, where it is chunked) and a guess at the
    answer's first tokens in one pass: its choices are the prefill's token and a verify's after it, and
    after ``accept`` the cache and the next choices are those of the two passes apart. A model whose
    logits are scaled after the output layer gets the same through a verify of its own."""
    from transformers import LlamaForCausalLM

    class Scaled(LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 2.0
            return out

    prompt = [5, 17, 3, 99, 42, 8, 250, 11, 60, 61, 7]
    for scaled in (False, True):
        model = new_llama(300, "tiny", seed=3).eval()
        if scaled:
            model.__class__ = Scaled
        plain = HFTarget(model, prefill_chunk=chunk)
        greedy = [plain.prefill(prompt)]
        for _ in range(5):
            greedy.append(plain.verify([])[0])
            plain.accept(0)
        draft = [*greedy[:3], (greedy[3] + 1) % 300, *range(20)]

        fused = HFTarget(model, prefill_chunk=chunk)
        choices = fused.prefill_draft(prompt, draft)
        assert len(choices) == len(draft) + 1 and list(choices)[:4] == greedy[:4]
        fused.accept(3)
        assert fused.cache.get_seq_length() == len(prompt) + 3 and fused.pending == greedy[3]
        assert list(fused.verify(greedy[4:6])) == greedy[4:6] + [fused.choices[2]]
        apart = HFTarget(model, prefill_chunk=chunk)
        apart.prefill(prompt)
        apart.verify(greedy[:3])
        apart.accept(3)
        assert list(apart.verify(greedy[4:6])) == list(fused.choices)


def test_a_draft_right_from_the_answers_first_token_is_verified_in_the_prompts_pass():
    """The fastapply drafter's calm opening is verified with the prompt: a rewrite whose draft is the
    answer takes one pass in all, from the prompt to the end of a short answer (the replay target's
    choices are the reference's, so the opening's choice 0 is the answer's first token)."""
    context = DraftContext(prompt_ids=[1, 2], prediction_ids=[10, 11, 12, 13, 14, 99])
    target = ReplayTarget([10, 11, 12, 13, 14, 99], stop_id=99)
    out, stats = speculative_generate(target, SpecEditsDrafter(context), [1, 2], 100, {99})
    assert out == [10, 11, 12, 13, 14, 99] and stats.passes == 1 and stats.accepted == (6,)
    wrong = ReplayTarget([10, 11, 20, 21, 22, 99], stop_id=99)
    out, stats = speculative_generate(wrong, SpecEditsDrafter(context), [1, 2], 100, {99})
    assert out == [10, 11, 20, 21, 22, 99] and stats.accepted[0] == 2


def test_the_prompt_shows_markers_indented_like_their_code(tokenizer):
    """With the file's language the model reads the update as training snippets are written: the marker
    after ``def make_cache():`` indented like the body it stands for (fastapply-small copied it at
    column 0 into its answer); without it, as given."""
    original = "class Cache:\n    pass\n\n\ndef make_cache():\n    return Cache(128)\n"
    update = "class Cache:\n    def clear(self):\n        pass\n\n\ndef make_cache():\n# ... existing code ...\n"
    indented = update.replace("\n# ...", "\n    # ...")
    assert plan_edit(tokenizer, original, update, language="python").prompt_ids == plan_edit(
        tokenizer, original, indented).prompt_ids
    assert plan_edit(tokenizer, original, update).prompt_ids != plan_edit(tokenizer, original, indented).prompt_ids
