"""Draft-model speculative decoding: a smaller model of the same tokenizer drafts, the model verifies.

Lossless against ``model.generate`` in float32 (greedy), the model's own distribution under sampling
(and the test catches a wrong acceptance rule), the distillation script end to end, and the CLI."""

import copy
import itertools
import json

import pytest
import torch
from typer.testing import CliRunner

from fastapply.apply import plan_edit, run_plan
from fastapply.cli import app
from fastapply.decode import speculative_generate
from fastapply.draftmodel import (
    DraftModelDrafter,
    draft_model_factory,
    load_draft_model,
)
from fastapply.draftvocab import DRAFT_VOCAB_FILE
from fastapply.errors import UsageError
from fastapply.loading import load_model
from fastapply.target import HFTarget
from finetune.scratch import new_llama, save_checkpoint, stdlib_corpus, train_tokenizer
from tests.samples import SMALL_PY
from tests.test_decode import (
    CASES,
    FlatCostTarget,
    chi_square_p,
    exact_distribution,
    greedy_reference,
)

POLICIES = ("draft-model", "fastapply+draft-model")


def scaled_llama(vocab_size, seed, scale=8.0):
    """A tiny random Llama whose projections are scaled up: its greedy output varies (an unscaled one
    repeats its last token) and reaches EOS, so drafts are right sometimes and wrong sometimes."""
    model = new_llama(vocab_size, "tiny", seed=seed)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "proj" in name:
                weight.mul_(scale)
    return model


def perturbed(model, noise, seed=1):
    """A copy of ``model`` with Gaussian noise of ``noise`` times each weight's spread: a related draft."""
    other = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for weight in other.parameters():
            weight.add_(torch.randn(weight.shape, generator=generator) * noise * weight.std())
    return other


@pytest.fixture(scope="module")
def target(tokenizer):
    return scaled_llama(len(tokenizer), seed=0)


@pytest.fixture(scope="module")
def drafts(target, tokenizer):
    return {"itself": target, "perturbed": perturbed(target, 0.1), "unrelated": scaled_llama(len(tokenizer), 5)}


def greedy_steps(model, ids, n):
    """``n`` greedy tokens after ``ids``, each from a full forward pass without a cache."""
    ids = list(ids)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[-n:]


def test_proposals_are_the_draft_models_greedy_continuation_whatever_the_output_did(target):
    """The cache follows the output forwards, backwards (a rejected draft) and sideways (a replaced token)."""
    prompt = list(range(10, 60))
    drafter = DraftModelDrafter(target, prompt, max_tokens=5, min_confidence=0.0)
    for out in ([7], [7, 8, 9], [7, 8], [7, 8], [7, 8, 9, 10, 11, 12, 13], [7, 30], [40]):
        assert drafter.propose(out, 100) == greedy_steps(target, prompt + out, 5), out
    assert drafter.propose([7], 2) == greedy_steps(target, prompt + [7], 2)


def test_a_draft_stops_where_the_draft_model_is_unsure(target):
    prompt = list(range(10, 60))
    assert len(DraftModelDrafter(target, prompt, max_tokens=6, min_confidence=0.0).propose([7], 100)) == 6
    assert len(DraftModelDrafter(target, prompt, max_tokens=6, min_confidence=1.0).propose([7], 100)) == 1
    assert DraftModelDrafter(target, prompt).propose([7], 0) == []


def test_a_draft_ends_with_a_stop_id(target):
    """Nothing after the answer's end is verified, so the draft model does not draft past it."""
    prompt = list(range(10, 60))
    ahead = greedy_steps(target, prompt + [7], 6)
    stop = ahead[2]
    drafted = DraftModelDrafter(target, prompt, max_tokens=6, min_confidence=0.0, stop_ids={stop}).propose([7], 100)
    assert drafted == ahead[:ahead.index(stop) + 1]
    first = DraftModelDrafter(target, prompt, max_tokens=6, min_confidence=0.0, stop_ids={ahead[0]})
    assert first.propose([7], 100) == ahead[:1]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("draft", ["itself", "perturbed", "unrelated"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_greedy_with_a_draft_model_equals_generate(target, drafts, tokenizer, policy, draft, case):
    plan = plan_edit(tokenizer, *CASES[case])
    expected = greedy_reference(target, tokenizer, plan.prompt_ids, 96)
    build = draft_model_factory(drafts[draft], min_confidence=0.0, stop_ids={tokenizer.eos_token_id})
    proposals = []  # (tokens out, what the draft model proposed after them)

    def recorded(context, model=None):
        drafter = build(context, model)
        propose = drafter.propose

        def propose_and_record(out, k):
            proposals.append((len(out), propose(out, k)))
            return proposals[-1][1]

        drafter.propose = propose_and_record
        return drafter

    result = run_plan(HFTarget(target), tokenizer, plan, policy, 96, {tokenizer.eos_token_id},
                      models={"draft-model": recorded})
    assert result.token_ids == expected
    if draft == "itself":  # the model drafting for itself: every token it drafts is right
        assert proposals and result.stats.sources.get("draft-model", 0) > 0
        for done, proposal in proposals:  # through the EOS it foresees, never past it
            assert proposal == expected[done:done + len(proposal)]
        if policy == "draft-model":  # every pass is the draft model's: the loop keeps every token it verifies
            assert result.stats.accepted == result.stats.proposed


def test_a_scored_subset_of_the_vocabulary_stays_lossless(target, tokenizer):
    """Scoring only some ids (a checkpoint's draft_vocab.json) changes what is drafted, never the output."""
    plan = plan_edit(tokenizer, *CASES[0])
    expected = greedy_reference(target, tokenizer, plan.prompt_ids, 96)
    every_id = run_plan(HFTarget(target), tokenizer, plan, "draft-model", 96, {tokenizer.eos_token_id},
                        models={"draft-model": draft_model_factory(target, range(len(tokenizer)), min_confidence=0.0)})
    assert every_id.token_ids == expected and every_id.stats.acceptance > 0.95
    odd_ids = draft_model_factory(target, range(1, len(tokenizer), 2), min_confidence=0.0)
    drafter = odd_ids(plan.context, None)
    outside = set(range(0, len(tokenizer), 2)) - set(plan.prompt_ids)
    assert not set(drafter.propose([5], 8)) & outside  # an even id outside the prompt is never proposed
    result = run_plan(HFTarget(target), tokenizer, plan, "draft-model", 96, {tokenizer.eos_token_id},
                      models={"draft-model": odd_ids})
    assert result.token_ids == expected


# -- sampling: the draft model's proposals keep the model's distribution ------------------------------------

VOCAB = 4  # tests.test_decode.exact_distribution enumerates its sequences of 3 tokens over 4 ids


@pytest.fixture(scope="module")
def small_vocab_models():
    """(target, draft): tiny Llamas over 4 tokens with different, position-dependent distributions,
    neither flat nor one-hot (no pair of first tokens has more than a third of the mass)."""
    models = []
    for seed in (6, 7):
        model = new_llama(VOCAB, "tiny", seed=seed)
        with torch.no_grad():
            model.lm_head.weight.mul_(1.5)
        models.append(model)
    return tuple(models)


class LenientTarget(FlatCostTarget):
    """A WRONG acceptance rule: keeps a drafted token whenever the model gives it probability above LEVEL
    (instead of only when its own sample equals it)."""

    LEVEL = 0.2
    _draft: tuple[int, ...] = ()  # the prefill has no draft

    def verify(self, draft):
        self._draft = tuple(draft)
        return super().verify(draft)

    def _choose(self, logits):
        sampled = super()._choose(logits)
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        return [d if d is not None and probs[i, d] > self.LEVEL else s
                for i, (s, d) in enumerate(itertools.zip_longest(sampled, self._draft[:len(sampled)]))]


def first_two_counts(target, draft, prompt, target_cls, runs):
    """How often speculative sampling (the draft model drafting, temperature 1) starts with each pair of tokens."""
    counts = {}
    for seed in range(runs):
        drafter = DraftModelDrafter(draft, prompt, min_confidence=0.0)
        out, stats = speculative_generate(target_cls(target, temperature=1.0, seed=seed), drafter, prompt, 3)
        assert stats.proposed[0] == 1  # the second token was drafted by the draft model, then verified
        counts[tuple(out[:2])] = counts.get(tuple(out[:2]), 0) + 1
    return counts


def test_speculative_sampling_with_a_draft_model_keeps_the_model_distribution(small_vocab_models):
    target, draft = small_vocab_models
    prompt = [0, 1]
    exact = {}
    for seq, p in exact_distribution(target, prompt).items():  # P(t1, t2, t3) -> P(t1, t2)
        exact[seq[:2]] = exact.get(seq[:2], 0.0) + p
    runs = 600
    right = first_two_counts(target, draft, prompt, FlatCostTarget, runs)
    assert chi_square_p(right, exact, runs) > 1e-3
    # the same test rejects a wrong acceptance rule: it has the power to catch one
    wrong = first_two_counts(target, draft, prompt, LenientTarget, runs)
    assert chi_square_p(wrong, exact, runs) < 1e-3


# -- finetune/distill.py: a draft model for a (tiny) target, end to end --------------------------------------

def edit_records(count):
    """Training records: small edits of ``SMALL_PY`` (a file the copy-trained ``sample_model`` writes back)."""
    lines = SMALL_PY.splitlines(keepends=True)
    records = []
    for i in range(count):
        edited = "".join(lines[:i + 2] + [f"    # step {i}\n"] + lines[i + 2:])
        records.append({"original": SMALL_PY, "update": f"# ... existing code ...\n    # step {i}\n"
                        "# ... existing code ...\n", "instruction": "", "expected": edited})
    return records


def test_distill_writes_a_draft_model_that_drafts_losslessly(sample_model, tmp_path):
    from finetune.distill import main

    model, tokenizer, checkpoint = sample_model
    train_file = tmp_path / "train.jsonl"
    train_file.write_text("".join(json.dumps(r) + "\n" for r in edit_records(5)))
    out = tmp_path / "distill"
    args = ["--target", str(checkpoint), "--train-file", str(train_file), "--out", str(out), "--examples", "4",
            "--held-out", "1", "--layers", "1", "--max-steps", "2", "--vocab-size", "64", "--device", "cpu"]
    assert main(args) == 0
    answers = (out / "answers.jsonl").read_text().splitlines()
    assert len(answers) == 4 and all(json.loads(a)["token_ids"] for a in answers)
    draft, _ = load_model(str(out / "model"), device="cpu", dtype="float32")
    assert draft.config.num_hidden_layers == 1
    assert len(json.loads((out / "model" / DRAFT_VOCAB_FILE).read_text())["token_ids"]) == 64
    summary = json.loads((out / "model" / "distill.json").read_text())
    assert set(summary["replay"]) == {"fastapply", "draft-model", "fastapply+draft-model"}
    assert summary["training"]["steps"] == 2 and summary["seconds_per_token"]["ratio"] > 0

    plan = plan_edit(tokenizer, SMALL_PY, "# ... existing code ...\n    # new\n# ... existing code ...\n")
    expected = greedy_reference(model, tokenizer, plan.prompt_ids, 200)
    models = {"draft-model": load_draft_model(str(out / "model"), model, tokenizer)}
    for policy in POLICIES:
        result = run_plan(HFTarget(model), tokenizer, plan, policy, 200, {tokenizer.eos_token_id}, models=models)
        assert result.token_ids == expected[:len(result.token_ids)] and result.closed

    assert main(args) == 0  # run again: resumes, and answers nothing twice
    assert (out / "answers.jsonl").read_text().splitlines() == answers


# -- the command line --------------------------------------------------------------------------------------

UPDATE = "def read_config(path):\n    config = {}\n# ... existing code ...\n"


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture()
def edit_env(sample_model, tmp_path, monkeypatch):
    monkeypatch.setenv("FASTAPPLY_MODEL", str(sample_model[2]))
    monkeypatch.setenv("FASTAPPLY_DEVICE", "cpu")
    path = tmp_path / "config.py"
    path.write_text(SMALL_PY)
    return path


def test_cli_applies_an_edit_with_a_draft_model(edit_env, sample_model, monkeypatch):
    plain = invoke(edit_env, "--edit", UPDATE, "--draft", "none")
    assert plain.exit_code == 0, plain.output
    with_draft = invoke(edit_env, "--edit", UPDATE, "--draft-model", sample_model[2], "--json")
    assert with_draft.exit_code == 0, with_draft.output
    data = json.loads(with_draft.stdout)
    assert data["text"] == plain.stdout and data["draft"] == "fastapply+draft-model"  # the default with one
    monkeypatch.setenv("FASTAPPLY_DRAFT_MODEL", str(sample_model[2]))
    alone = invoke(edit_env, "--edit", UPDATE, "--draft", "draft-model", "--json")
    assert alone.exit_code == 0, alone.output
    data = json.loads(alone.stdout)
    assert data["text"] == plain.stdout and data["draft"] == "draft-model"
    assert data["stats"]["accepted_by_source"]["draft-model"] > 0  # the model drafting for itself


def test_cli_refuses_a_draft_model_with_another_tokenizer(edit_env, tmp_path):
    other = train_tokenizer(stdlib_corpus(20), vocab_size=512)
    checkpoint = save_checkpoint(new_llama(len(other), "tiny"), other, tmp_path / "other")
    result = invoke(edit_env, "--edit", UPDATE, "--draft-model", checkpoint)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [(
        f"fastapply: error: the draft model {checkpoint} has another tokenizer (512 tokens, the model's 1024); "
        "a draft model must share the model's tokenizer")]


def test_a_draft_policy_without_a_draft_model_says_what_it_needs(edit_env):
    result = invoke(edit_env, "--edit", UPDATE, "--engine", "model", "--draft", "fastapply+draft-model")
    assert result.exit_code == 2 and "needs --draft-model PATH" in result.stderr


def test_a_draft_model_cannot_go_with_a_server(edit_env, sample_model):
    result = invoke(edit_env, "--edit", UPDATE, "--server", "http://127.0.0.1:9", "--draft-model", sample_model[2])
    assert result.exit_code == 2 and "--draft-model runs beside a local model" in result.stderr


def test_batch_drafts_with_a_draft_model_too(edit_env, sample_model, tmp_path):
    edits = tmp_path / "edits.jsonl"
    edits.write_text(json.dumps({"file": str(edit_env), "edit": UPDATE}) + "\n")
    plain = invoke("batch", edits, "--engine", "model", "--draft", "none")
    alone = invoke("batch", edits, "--engine", "model", "--draft", "draft-model", "--draft-model", sample_model[2])
    assert plain.exit_code == 0 and alone.exit_code == 0, alone.output
    plain_record, record = json.loads(plain.stdout), json.loads(alone.stdout)
    assert record["ok"] and record["text"] == plain_record["text"]
    assert record["stats"]["accepted_by_source"]["draft-model"] > 0
    missing = invoke("batch", edits, "--engine", "model", "--draft", "draft-model")
    assert missing.exit_code == 2 and "needs --draft-model PATH" in missing.stderr


def test_bench_adds_the_draft_model_methods_when_given_one(sample_model, tmp_path):
    _, _, checkpoint = sample_model
    (tmp_path / "a.py").write_text(SMALL_PY)
    (tmp_path / "a.edit").write_text(UPDATE)
    out = tmp_path / "bench.json"
    result = invoke("bench", "--model", checkpoint, "--device", "cpu", "--file", tmp_path / "a.py",
                    "--edit-file", tmp_path / "a.edit", "--draft-model", checkpoint, "--out", out)
    assert result.exit_code == 0, result.output
    rows = {row["method"]: row for row in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"plain", "prompt-lookup", "ngram", "fastapply", "draft-model", "fastapply+draft-model"}
    assert all(row["same_as_plain"] for row in rows.values())
    assert rows["draft-model"]["passes"] < rows["plain"]["passes"]


def test_check_vocabulary_accepts_the_same_tokenizer_only(tokenizer, tiny_model):
    from fastapply.draftmodel import check_vocabulary

    model, _ = tiny_model
    check_vocabulary(tokenizer, model, tokenizer, "same")
    with pytest.raises(UsageError, match="embeds 1000 token ids, its tokenizer has 1024"):
        check_vocabulary(tokenizer, new_llama(1000, "tiny"), tokenizer, "short")
