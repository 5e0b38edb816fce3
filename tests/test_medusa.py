"""Medusa heads on the tiny Llama: the untrained heads' known answer, the candidate tree against brute
force, save/load, the training targets by hand, training (loss falls, accuracy rises, resuming), and
lossless decoding with them."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import random

import pytest
import torch

from fastapply.apply import plan_edit, run_plan
from fastapply.draftvocab import (
    DRAFT_VOCAB_FILE,
    VOCAB_SIZE,
    ScoredRows,
    frequent_tokens,
)
from fastapply.errors import FastapplyError
from fastapply.loading import load_model
from fastapply.medusa import MedusaDrafter, MedusaHeads, best_chains, medusa_factory
from fastapply.prompt import get_preset, prompt_ids
from fastapply.snippet import make_snippet
from fastapply.target import HFTarget
from finetune.echo import edit_window
from finetune.examples import IGNORE, build_example, read_records
from finetune.medusa import MedusaTrainConfig, head_targets, main, train_heads
from finetune.scratch import new_llama
from tests.samples import SMALL_PY
from tests.test_decode import CASES, FlatCostTarget, greedy_reference
from tests.test_finetune import write_jsonl

WORDS = ["return", "import", "class", "def", "self", "None", "True", "False", "while", "yield"]  # 13 tokens a line


def cycle_records(count):
    """Answers that repeat one line of distinct tokens: each token determines the ones after it."""
    line = " ".join(WORDS) + "\n"
    return [{"original": f"x = {i}\n", "update": line, "instruction": "", "expected": line * 8}
            for i in range(count)]


def random_heads(model, n_heads=3, seed=0):
    """Heads with random blocks: they propose arbitrary tokens."""
    heads = MedusaHeads.new(model, n_heads)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in heads.blocks:
            block.weight.normal_(0, 1.0, generator=generator)
    return heads.eval()


def prefilled(model, tokenizer):
    target = HFTarget(model, keep_hidden=True)
    first = target.prefill(prompt_ids(tokenizer, get_preset("default"), "x = 1\n", "x = 2\n"))
    return target, first


# -- the heads and their drafter, by hand --------------------------------------------------------

def test_untrained_heads_repeat_the_base_guess(tiny_model):
    """W = 0: every head is the base's own lm_head on the hidden state that chose the last token, so
    each proposes that token again, after the prefill and after a verify pass alike."""
    model, tokenizer = tiny_model
    target, first = prefilled(model, tokenizer)
    drafter = MedusaDrafter(MedusaHeads.new(model, 3), target)
    assert drafter.propose([first], 8) == [first] * 3
    assert drafter.propose([first], 2) == [first] * 2
    choices = target.verify([5, 6])
    target.accept(1)
    assert drafter.propose([first, 5, choices[1]], 8) == [choices[1]] * 3


def test_heads_propose_in_order_and_the_first_candidate_is_the_proposal(tiny_model):
    """A head pushed towards one token's embedding proposes it, in its own place in the chain."""
    model, tokenizer = tiny_model
    target, first = prefilled(model, tokenizer)
    heads = MedusaHeads.new(model, 3)
    forced = 7 if first != 7 else 8
    with torch.no_grad():
        heads.blocks[1].bias.copy_(1e4 * model.lm_head.weight[forced])  # head 2 (index 1)
    drafter = MedusaDrafter(heads, target, top_k=3, tree_nodes=6)
    proposal = drafter.propose([first], 8)
    assert proposal == [first, forced, first]
    chains = drafter.candidates([first], 8)
    assert chains[0] == proposal
    assert len({tuple(c[:d]) for c in chains for d in range(1, len(c) + 1)}) == 6  # the node budget, spent
    assert drafter.candidates([first], 2)[0] == proposal[:2]


def tree_nodes(chains):
    return {tuple(chain[:d]) for chain in chains for d in range(1, len(chain) + 1)}


@pytest.mark.parametrize("seed", range(5))
def test_candidate_tree_holds_the_most_probable_nodes(seed):
    """Against brute force: the tree is the argmax chain plus the most probable other nodes."""
    rng = random.Random(seed)
    depth, width, budget = 3, 3, 8
    probs = [sorted((rng.random() for _ in range(width)), reverse=True) for _ in range(depth)]
    tokens = [[10 * d + j for j in range(width)] for d in range(depth)]
    chains = best_chains(probs, tokens, depth, budget)
    assert chains[0] == [tokens[d][0] for d in range(depth)]
    nodes = tree_nodes(chains)
    assert len(nodes) == budget
    assert all(not any(other[:len(c)] == tuple(c) and len(other) > len(c) for other in nodes) for c in chains)

    def p(path):
        return torch.tensor([probs[d][t % 10] for d, t in enumerate(path)]).prod().item()

    argmax = {tuple(tokens[d][0] for d in range(k)) for k in range(1, depth + 1)}
    others = [tuple(tokens[d][j] for d, j in enumerate(path)) for k in range(1, depth + 1)
              for path in itertools.product(range(width), repeat=k)]
    best_others = sorted((n for n in others if n not in argmax), key=p, reverse=True)[:budget - depth]
    assert nodes == argmax | set(best_others)
    assert [p(c) for c in chains[1:]] == sorted((p(c) for c in chains[1:]), reverse=True)


# -- save and load -------------------------------------------------------------------------------

def test_save_load_round_trip(tiny_model, tmp_path):
    model, _ = tiny_model
    heads = random_heads(model)
    heads.save(tmp_path / "heads", {"steps": 3})
    config = json.loads((tmp_path / "heads" / "medusa_config.json").read_text())
    assert config == {"n_heads": 3, "hidden_size": 64, "vocab_size": model.config.vocab_size, "base_model": "",
                      "metrics": {"steps": 3}}
    loaded = MedusaHeads.load(tmp_path / "heads", model)
    hidden = torch.randn(5, 64)
    with torch.no_grad():
        assert torch.equal(loaded(hidden), heads(hidden))
    assert not any(name.startswith("lm_head") for name in loaded.state_dict())  # the base's, not saved
    assert loaded.vocab is None and not (tmp_path / "heads" / DRAFT_VOCAB_FILE).exists()


def test_a_draft_vocabulary_is_saved_and_scores_its_columns_of_the_full_logits(tiny_model, tmp_path):
    model, _ = tiny_model
    heads = random_heads(model)
    heads.vocab = [9, 5, 700]  # most frequent first, as the trainer writes it
    heads.save(tmp_path / "heads")
    loaded = MedusaHeads.load(tmp_path / "heads", model)
    assert loaded.vocab == [9, 5, 700]
    rows = ScoredRows(model.get_output_embeddings(), loaded.vocab)
    assert rows.ids.tolist() == [5, 9, 700]
    hidden = torch.randn(2, 64)
    with torch.no_grad():
        full, scored = loaded(hidden), loaded(hidden, rows)
    assert scored.shape == (3, 2, 3)
    assert torch.allclose(scored, full[..., [5, 9, 700]], atol=1e-5)
    assert rows.tokens(torch.tensor([2, 0])).tolist() == [700, 5]


def test_heads_for_another_model_are_refused_in_one_line(tiny_model, tmp_path):
    model, _ = tiny_model
    MedusaHeads.new(model, 2).save(tmp_path / "heads")
    for other in (new_llama(model.config.vocab_size, "small"), new_llama(512, "tiny")):
        with pytest.raises(FastapplyError, match="this model has hidden size") as error:
            MedusaHeads.load(tmp_path / "heads", other)
        assert "\n" not in str(error.value)
    with pytest.raises(FastapplyError, match="medusa_config.json is missing"):
        MedusaHeads.load(tmp_path / "nowhere", model)
    (tmp_path / "heads" / "medusa_heads.safetensors").unlink()
    with pytest.raises(FastapplyError, match="medusa_heads.safetensors is missing"):
        MedusaHeads.load(tmp_path / "heads", model)


# -- training ------------------------------------------------------------------------------------

def train_config(model_dir, train_file, **changes):
    values = {"model": str(model_dir), "train_file": train_file, "device": "cpu", "n_heads": 3, "holdout": 2,
              "batch_size": 2, "positions": 32, "eval_positions": 64, "learning_rate": 1e-2, "warmup_steps": 0,
              "max_steps": 40, "log_every": 5}
    return MedusaTrainConfig(**(values | changes))


def test_head_targets_are_the_tokens_ahead(tiny_model):
    """At answer position t head i learns the data's token t+1+i (labels), or the base's own choice for it
    given the data up to t+i (greedy), from the base's hidden state at t; IGNORE past the answer."""
    model, tokenizer = tiny_model
    example = build_example(tokenizer, get_preset("default"), cycle_records(1)[0])
    ids, length = list(example.input_ids), len(example.input_ids)
    answer_start = next(i for i, label in enumerate(example.labels) if label != IGNORE)
    with torch.no_grad():
        states = model.get_decoder()(input_ids=torch.tensor([ids])).last_hidden_state[0]
        choices = model(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist()
    config = train_config("unused", "unused", positions=10_000)  # every answer position
    for targets, expected_at in (("labels", lambda j: ids[j + 1]), ("greedy", lambda j: choices[j])):
        hidden, got = head_targets(MedusaHeads.new(model, 3), model.get_decoder(), [example], 2,
                                   dataclasses.replace(config, targets=targets), "cpu", contextlib.nullcontext(),
                                   torch.Generator())
        positions = range(answer_start - 1, length - 1)
        assert got.shape == (len(positions), 3)
        assert torch.allclose(hidden, states[answer_start - 1:length - 1], atol=1e-5)
        for row, t in enumerate(positions):
            assert got[row].tolist() == [expected_at(t + i) if t + 1 + i < length else IGNORE for i in (1, 2, 3)]


def test_training_lowers_the_loss_and_raises_head_accuracy(tiny_checkpoint, tmp_path):
    train_file = str(write_jsonl(tmp_path / "train.jsonl", cycle_records(10)))
    code = main(["--model", str(tiny_checkpoint), "--train-file", train_file, "--out", str(tmp_path / "heads"),
                 "--targets", "labels", "--heads", "3", "--holdout", "2", "--batch-size", "2", "--positions", "32",
                 "--lr", "1e-1", "--max-steps", "40", "--log-every", "5", "--device", "cpu"])
    assert code == 0
    metrics = json.loads((tmp_path / "heads" / "metrics.json").read_text())
    losses = [entry["loss"] for entry in metrics["log"]]
    assert losses[-1] < 0.2 * losses[0]
    first, last = metrics["evals"][0], metrics["evals"][-1]
    assert first["step"] == 0 and last["step"] == 40
    assert max(first["top1"]) < 0.2 and min(last["top1"]) > 0.8  # each head learns its token ahead
    assert all(after < 0.5 * before for before, after in zip(first["loss"], last["loss"]))
    assert last["chain_tokens_per_pass"] > 3.0
    model, tokenizer = load_model(str(tiny_checkpoint), "cpu", "float32")
    saved = json.loads((tmp_path / "heads" / "medusa_config.json").read_text())
    assert saved["base_model"] == str(tiny_checkpoint) and saved["metrics"]["eval"]["top1"] == last["top1"]
    loaded = MedusaHeads.load(tmp_path / "heads", model)
    assert loaded.config.n_heads == 3
    records = read_records(train_file)[:-2]  # the held-out two are not counted
    answers = [[t for t in build_example(tokenizer, get_preset("default"), r).labels if t != IGNORE] for r in records]
    assert loaded.vocab == frequent_tokens(answers, VOCAB_SIZE)


def test_resume_continues_from_the_saved_step(tiny_checkpoint, tmp_path):
    train_file = str(write_jsonl(tmp_path / "train.jsonl", cycle_records(6)))
    config = train_config(tiny_checkpoint, train_file, max_steps=4, save_every=2, log_every=1, edit_weight=3.0)
    straight = train_heads(config, tmp_path / "straight")
    resumed = train_heads(config, tmp_path / "resumed", resume=tmp_path / "straight")  # takes checkpoint-000002
    assert resumed.steps == 4
    log = json.loads((tmp_path / "resumed" / "metrics.json").read_text())["log"]
    straight_log = json.loads((tmp_path / "straight" / "metrics.json").read_text())["log"]
    assert [e["step"] for e in log] == [1, 2, 3, 4]
    assert [e["loss"] for e in log] == pytest.approx([e["loss"] for e in straight_log], abs=1e-5)
    for a, b in zip(resumed.heads.parameters(), straight.heads.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


# -- decoding with the heads is lossless ---------------------------------------------------------

@pytest.mark.parametrize("policy", ["medusa", "fastapply+medusa"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("tree_nodes", [3, 16])  # the argmax chain alone; a tree of the heads' top tokens
def test_decoding_with_random_heads_equals_generate(tiny_model, policy, case, tree_nodes):
    model, tokenizer = tiny_model
    plan = plan_edit(tokenizer, *CASES[case])
    expected = greedy_reference(model, tokenizer, plan.prompt_ids, 96)
    target = FlatCostTarget(model, keep_hidden=True)  # drafts and trees always pay: both are verified
    result = run_plan(target, tokenizer, plan, policy, 96, {tokenizer.eos_token_id},
                      models={"medusa": medusa_factory(random_heads(model), tree_nodes=tree_nodes)})
    assert result.token_ids == expected
    if policy == "medusa":
        assert max(result.stats.proposed) == tree_nodes  # the whole tree was verified


@pytest.mark.parametrize("policy", ["medusa", "fastapply+medusa"])
def test_heads_with_a_draft_vocabulary_propose_only_its_tokens_and_the_prompts(tiny_model, policy):
    model, tokenizer = tiny_model
    heads = random_heads(model)
    heads.vocab = list(range(0, model.config.vocab_size, 7))
    plan = plan_edit(tokenizer, *CASES[0])
    allowed = set(heads.vocab) | set(plan.prompt_ids)
    expected = greedy_reference(model, tokenizer, plan.prompt_ids, 96)
    build = medusa_factory(heads)
    proposed = []

    def noted(method, chains):  # ``method`` of the drafter, its proposed tokens noted
        def call(out, k):
            result = method(out, k)
            for chain in result if chains else [result]:
                proposed.extend(chain)
            return result
        return call

    def recording(context, target):
        drafter = build(context, target)
        drafter.propose, drafter.candidates = noted(drafter.propose, False), noted(drafter.candidates, True)
        return drafter

    result = run_plan(FlatCostTarget(model, keep_hidden=True), tokenizer, plan, policy, 96,
                      {tokenizer.eos_token_id}, models={"medusa": recording})
    assert result.token_ids == expected
    if policy == "medusa":
        assert proposed and set(proposed) <= allowed


@pytest.fixture(scope="module")
def sample_heads(sample_model, tmp_path_factory):
    """Heads trained in seconds on the copying model's own choices (greedy targets) for edits of SMALL_PY."""
    path = sample_model[2]
    rng = random.Random(2)
    lines = SMALL_PY.splitlines(keepends=True)
    records = []
    for _ in range(12):
        edited = edit_window(lines, rng, rng.choice(["    pass\n", "    return None\n", "# note\n"]))
        records.append({"original": SMALL_PY, "update": make_snippet(SMALL_PY, edited, "python", context=2),
                        "instruction": "", "expected": edited})
    tmp = tmp_path_factory.mktemp("sample-heads")
    config = train_config(path, str(write_jsonl(tmp / "train.jsonl", records)), batch_size=4, positions=64,
                          learning_rate=1e-1, max_steps=40)
    return train_heads(config, tmp / "heads")


@pytest.mark.parametrize("policy", ["medusa", "fastapply+medusa"])
def test_decoding_with_trained_heads_equals_generate_and_accepts_their_drafts(sample_model, sample_heads, policy):
    model, tokenizer, _ = sample_model
    heads = MedusaHeads.load(sample_heads.out_dir, model)
    edited = SMALL_PY.replace("    config = {}\n", "    config = {}\n    seen = set()\n")
    plan = plan_edit(tokenizer, SMALL_PY, make_snippet(SMALL_PY, edited, "python", context=2))
    expected = greedy_reference(model, tokenizer, plan.prompt_ids, 400)
    target = HFTarget(model)  # the factory has it keep its hidden states
    result = run_plan(target, tokenizer, plan, policy, 400, {tokenizer.eos_token_id},
                      models={"medusa": medusa_factory(heads)})
    assert result.token_ids == expected[:len(result.token_ids)]
    assert len(result.token_ids) == len(expected) or result.closed
    if policy == "medusa":
        assert sample_heads.evaluation["top1"][0] > 0.5
        assert result.stats.sources.get("medusa", 0) > result.stats.passes  # over one drafted token per pass


def test_drafter_needs_a_target_that_keeps_hidden_states(tiny_model):
    model, tokenizer = tiny_model
    target = HFTarget(model)
    target.prefill(prompt_ids(tokenizer, get_preset("default"), "x = 1\n", "x = 2\n"))
    with pytest.raises(RuntimeError, match="keep_hidden"):
        MedusaDrafter(MedusaHeads.new(model, 2), target).propose([0], 4)



def test_cli_and_bench_draft_with_medusa_heads(sample_model, sample_heads, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from fastapply.cli import app

    monkeypatch.setenv("FASTAPPLY_MODEL", str(sample_model[2]))
    monkeypatch.setenv("FASTAPPLY_DEVICE", "cpu")
    path = tmp_path / "config.py"
    path.write_text(SMALL_PY)
    update = make_snippet(SMALL_PY, SMALL_PY.replace("config = {}", "config = dict()"), "python", context=2)

    def invoke(*args):
        return CliRunner().invoke(app, [str(a) for a in args])

    plain = invoke(path, "--edit", update, "--engine", "model", "--draft", "none", "--force")  # a model that copies
    assert plain.exit_code == 0, plain.output
    heads = invoke(path, "--edit", update, "--engine", "model", "--medusa", sample_heads.out_dir, "--force", "--json")
    assert heads.exit_code == 0, heads.output
    data = json.loads(heads.stdout)
    assert data["text"] == plain.stdout and data["draft"] == "fastapply+medusa"  # the default with heads
    (tmp_path / "edit.txt").write_text(update)
    bench = invoke("bench", "--model", sample_model[2], "--file", path, "--edit-file", tmp_path / "edit.txt",
                   "--medusa", sample_heads.out_dir, "--methods", "plain,medusa,fastapply+medusa",
                   "--out", tmp_path / "bench.json")
    assert bench.exit_code == 0, bench.output
    rows = json.loads((tmp_path / "bench.json").read_text())["rows"]
    assert {row["method"] for row in rows} == {"plain", "medusa", "fastapply+medusa"}
    assert all(row["same_as_plain"] for row in rows)
