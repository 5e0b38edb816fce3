"""Fine-tuning on the tiny Llama: examples and bits per byte by hand, full and LoRA training, adapter
save/load, merging, resuming, and the CLI with an adapter and with the merged checkpoint."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from safetensors.torch import load_file
from typer.testing import CliRunner

from fastapply import bundled
from fastapply.apply import apply_edit
from fastapply.cli import app
from fastapply.errors import UsageError
from fastapply.loading import load_model
from fastapply.prompt import answer_ids, get_preset, prompt_ids
from finetune.config import TrainConfig, load_config
from finetune.examples import (IGNORE, Example, Miss, answer_nats, answer_nll_bits, bits_per_byte, build_example,
                               build_examples, epoch_token_batches, micro_batches, missed_tokens, read_records,
                               token_batches)
from finetune.merge import adapter_base, merge_adapter
from finetune.score import as_shown, by_misses, disagreements
from finetune.score import main as score_main
from finetune.ship import training_record
from finetune.soup import main as soup_main
from finetune.soup import soup
from finetune.unseen import main as unseen_main
from finetune.unseen import unseen
from finetune.heldout import evaluate
from finetune.train import autocast_context, initial_adapter, lr_factor, train
from finetune.train import main as train_main

# The edits the "apply model" learns by full fine-tuning, and those the adapter on top of it learns.
APPLY_RECORDS = [
    {"original": "x = 1\n", "update": "x = 2\n", "instruction": "", "expected": "x = 2\n"},
    {"original": "def f():\n    return 1\n", "update": "def f():\n    return 2\n", "instruction": "",
     "expected": "def f():\n    return 2\n"},
]
ADAPTER_RECORDS = [
    {"original": "count = 10\n", "update": "count = 20\n", "instruction": "", "expected": "count = 20\n"},
    {"original": "name = 'a'\n", "update": "name = 'b'\n", "instruction": "rename", "expected": "name = 'b'\n"},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def config_for(base, train_file, **changes) -> TrainConfig:
    values = dict(base_model=str(base), train_file=str(train_file), device="cpu", warmup_steps=0,
                  batch_size=2, grad_accum=1, log_every=1, max_length=512, lora_rank=8)
    values.update(changes)
    return TrainConfig(**values)


def logits_of(model, tokenizer):
    ids = torch.tensor([prompt_ids(tokenizer, get_preset("default"), "x = 1\n", "x = 2\n")])
    with torch.no_grad():
        return model.eval()(input_ids=ids).logits


@pytest.fixture(scope="module")
def apply_model(tiny_checkpoint, tmp_path_factory):
    """The tiny Llama fully fine-tuned on APPLY_RECORDS: a base that writes closed answers.

    Its (tied) embeddings are first scaled up 20x: at initialisation (std 0.02, hidden 64) no logit can
    exceed ~1.3, so a model this small could not become confident within a few dozen steps; a
    pretrained model's logits have that range already.
    """
    from finetune.scratch import save_checkpoint

    tmp = tmp_path_factory.mktemp("full")
    model, tokenizer = load_model(str(tiny_checkpoint), "cpu", "float32")
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(20)
    save_checkpoint(model, tokenizer, tmp / "base")
    config = config_for(tmp / "base", write_jsonl(tmp / "train.jsonl", APPLY_RECORDS), mode="full",
                        learning_rate=1e-2, max_steps=30, gradient_checkpointing=False)
    return train(config, tmp / "out")


@pytest.fixture(scope="module")
def lora_run(apply_model, tmp_path_factory):
    """A LoRA adapter trained on ADAPTER_RECORDS on top of ``apply_model``."""
    tmp = tmp_path_factory.mktemp("lora")
    train_file = write_jsonl(tmp / "train.jsonl", ADAPTER_RECORDS)
    config = config_for(apply_model.out_dir, train_file, eval_file=str(train_file), learning_rate=2e-3,
                        lora_alpha=128, lora_dropout=0.0, max_steps=30)
    return train(config, tmp / "adapter")


# -- examples and measures, by hand -------------------------------------------------------------

def test_example_labels_cover_the_answer_only(tokenizer):
    preset = get_preset("default")
    record = APPLY_RECORDS[1]
    example = build_example(tokenizer, preset, record)
    prompt = prompt_ids(tokenizer, preset, record["original"], record["update"])
    answer = answer_ids(tokenizer, preset, record["expected"])
    assert example.input_ids == (*prompt, *answer)
    assert example.labels == (*[IGNORE] * len(prompt), *answer)
    assert example.answer_bytes == len("<updated-code>\ndef f():\n    return 2\n\n</updated-code>")


def test_examples_longer_than_max_length_are_skipped_and_counted(tokenizer):
    preset = get_preset("default")
    lengths = [len(build_example(tokenizer, preset, r).input_ids) for r in APPLY_RECORDS]
    short = min(lengths)
    assert short < max(lengths)
    kept = build_examples(tokenizer, preset, APPLY_RECORDS, max_length=short)
    assert (len(kept.examples), kept.skipped_too_long) == (1, 1)
    assert len(kept.examples[0].input_ids) == short



def test_examples_built_in_worker_processes_are_the_same_in_the_same_order(tokenizer):
    preset = get_preset("default")
    records = APPLY_RECORDS * 3
    one = build_examples(tokenizer, preset, records, max_length=4096, edit_weight=4.0)
    assert build_examples(tokenizer, preset, records, max_length=4096, edit_weight=4.0, workers=2) == one
    assert [e.input_ids for e in one.examples] == [build_example(tokenizer, preset, r, 4.0).input_ids
                                                   for r in records]

def test_bits_per_byte_known_answer():
    # Uniform logits over 8 tokens cost log2(8) = 3 bits per answer token. Two examples of 3 and 2
    # answer tokens (15 bits) whose answers are 9 and 6 bytes long: 15 / 15 = 1 bit per byte.
    examples = [Example((1, 2, 3, 4, 5), (IGNORE, IGNORE, 3, 4, 5), 9), Example((1, 6, 7), (IGNORE, 6, 7), 6)]

    class Uniform(torch.nn.Module):
        def forward(self, input_ids, attention_mask, logits_to_keep):
            from types import SimpleNamespace
            return SimpleNamespace(logits=torch.zeros(input_ids.shape[0], logits_to_keep, 8))

    for batch_size in (1, 2):
        held_out = evaluate(Uniform(), examples, pad_id=0, batch_size=batch_size)
        assert held_out.bits_per_byte == pytest.approx(1.0)
        # Uniform logits choose token 0, which is no answer token: every answer token is missed.
        assert (held_out.greedy_exact, held_out.examples, held_out.misses_per_1000) == (0, 2, 1000.0)
    # One token predicted with probability 1/2 (logits ln 1 vs ln 1 over two classes) costs 1 bit.
    assert float(answer_nll_bits(torch.zeros(1, 1, 2), torch.tensor([[1]]))) == pytest.approx(1.0)
    # Per token, in nats: ln 2 where labelled, 0 where ignored, in the labels' shape.
    nats = answer_nats(torch.zeros(2, 2, 2), torch.tensor([[1, IGNORE], [0, 1]]))
    assert nats.shape == (2, 2)
    assert nats.flatten().tolist() == pytest.approx([math.log(2), 0.0, math.log(2), math.log(2)])
    assert bits_per_byte(6.0, 12) == 0.5


def test_held_out_counts_the_examples_greedy_decoding_writes_exactly():
    # A model that puts its top logit on the next input token, except that it always says 9 after 4:
    # the first example's answer (3, 4, 5) has one miss, the second's (6, 7) none.
    examples = [Example((1, 2, 3, 4, 5), (IGNORE, IGNORE, 3, 4, 5), 9), Example((1, 6, 7), (IGNORE, 6, 7), 6)]

    class NextToken(torch.nn.Module):
        def forward(self, input_ids, attention_mask, logits_to_keep):
            from types import SimpleNamespace
            following = torch.cat([input_ids[:, 1:], input_ids[:, -1:]], dim=1)
            following = torch.where(input_ids == 4, torch.full_like(following, 9), following)
            logits = torch.nn.functional.one_hot(following, 10).float()
            return SimpleNamespace(logits=logits[:, -logits_to_keep:])

    for batch_size in (1, 2):
        held_out = evaluate(NextToken(), examples, pad_id=0, batch_size=batch_size)
        assert (held_out.greedy_exact, held_out.examples) == (1, 2)
        assert held_out.misses_per_1000 == pytest.approx(1000 / 5)
        # where: the first answer's third token (5, after 4), for which the model chose 9 by a logit of 1 to 0
        assert held_out.where == ((Miss(at=2, wanted=5, chosen=9, regret=1.0),), ())
    # an unlabelled position is never a miss; a label is indexed from the example's first labelled one
    logits = torch.tensor([[[0., 9, 0], [9, 0, 0], [0, 2, 5]]])
    assert missed_tokens(logits, torch.tensor([[1, IGNORE, 1]])) == [(Miss(at=2, wanted=1, chosen=2, regret=3.0),)]
    assert missed_tokens(logits, torch.tensor([[IGNORE, 0, 2]])) == [()]


def test_micro_batches_resume_where_they_left_off():
    stream = micro_batches(5, 2, seed=3)
    first = [next(stream) for _ in range(7)]
    assert sorted(i for batch in first[:3] for i in batch) == [0, 1, 2, 3, 4]  # an epoch is a permutation
    assert [len(b) for b in first] == [2, 2, 1, 2, 2, 1, 2]
    resumed = micro_batches(5, 2, seed=3, start=4)
    assert [next(resumed) for _ in range(3)] == first[4:]


def test_token_batches_pack_similar_lengths_within_the_budget_and_resume():
    assert sorted(sorted(b) for b in epoch_token_batches([5, 1, 5, 1], 4, seed=0)) == [[0], [1, 3], [2]]
    lengths = [(7 * i) % 23 + 1 for i in range(40)]
    stream = token_batches(lengths, 24, seed=5)
    per_epoch = len(epoch_token_batches(lengths, 24, seed=5))
    first = [next(stream) for _ in range(per_epoch + 3)]
    assert sorted(i for batch in first[:per_epoch] for i in batch) == list(range(40))  # an epoch is a permutation
    assert all(max(lengths[i] for i in b) * len(b) <= 24 for b in first)
    assert all(len(b) > 1 for b in first[:per_epoch] if min(lengths[i] for i in b) <= 4)  # short ones share a pass
    resumed = token_batches(lengths, 24, seed=5, start=per_epoch - 1)
    assert [next(resumed) for _ in range(4)] == first[per_epoch - 1:]
    assert [len(b) for b in epoch_token_batches([9, 1], 4, seed=1)].count(1) == 2  # too long: alone


def test_lr_factor_warms_up_then_decays():
    assert [lr_factor(s, 10, 110) for s in (0, 9, 60, 110)] == pytest.approx([0.1, 1.0, 0.55, 0.1])


def test_config_file_rejects_unknown_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("base_model: m\ntrain_file: t.jsonl\nlora_rnak: 4\n")
    with pytest.raises(UsageError, match="lora_rnak"):
        load_config(path)
    path.write_text("base_model: m\ntrain_file: t.jsonl\nlora_rank: 4\ntarget_modules: [q_proj]\n")
    assert load_config(path, max_steps=5) == TrainConfig("m", "t.jsonl", lora_rank=4, target_modules=("q_proj",),
                                                         max_steps=5)



@pytest.mark.parametrize("path", sorted((Path(__file__).parents[1] / "finetune" / "configs").glob("*.yaml")),
                         ids=lambda path: path.name)
def test_every_committed_config_loads(path):
    """The recipes in finetune/configs are read as finetune.train reads them: no misspelt key."""
    config = load_config(path)
    assert config.mode in ("lora", "full") and config.max_length > 0


# -- training -----------------------------------------------------------------------------------

def test_full_fine_tuning_learns_the_edits(apply_model, tiny_checkpoint):
    losses = [e["loss"] for e in json.loads((apply_model.out_dir / "metrics.json").read_text())["log"]]
    assert len(losses) == 30 and losses[-1] < losses[0] / 10
    model, tokenizer = load_model(str(apply_model.out_dir), "cpu", "float32")  # a whole checkpoint
    base, _ = load_model(str(tiny_checkpoint), "cpu", "float32")
    assert not torch.equal(model.lm_head.weight, base.lm_head.weight)


def test_lora_training_loss_falls(lora_run):
    metrics = json.loads((lora_run.out_dir / "metrics.json").read_text())
    losses = [e["loss"] for e in metrics["log"]]
    assert len(losses) == 30 and losses[-1] < 0.1 * losses[0]
    assert all(later < earlier for earlier, later in zip(losses[5::5], losses[10::5]))  # and keeps falling
    first, last = metrics["evals"][0], metrics["evals"][-1]
    assert last["bits_per_byte"] < 0.1 * first["bits_per_byte"]
    # greedy decoding would write no held-out answer exactly before training, and every one after
    assert (first["greedy_exact"], last["greedy_exact"], last["misses_per_1000"]) == (0, last["examples"], 0.0)
    assert metrics["trainable_parameters"] == sum(p.numel() for n, p in lora_run.model.named_parameters()
                                                  if "lora_" in n)
    assert json.loads((lora_run.out_dir / "train_config.json").read_text())["lora_alpha"] == 128


def test_only_lora_parameters_change(lora_run, apply_model):
    base, _ = load_model(str(apply_model.out_dir), "cpu", "float32")
    before = dict(base.named_parameters())
    changed_lora = 0
    for name, param in lora_run.model.named_parameters():
        if "lora_" in name:
            changed_lora += "lora_B" in name and bool(param.abs().sum() > 0)  # B starts at zero
            continue
        plain = name.removeprefix("base_model.model.").replace(".base_layer", "")
        assert torch.equal(param, before[plain]), name
    assert changed_lora == 2 * 7  # every targeted linear layer of both blocks


def test_adapter_save_and_load_gives_the_same_logits(lora_run, apply_model):
    loaded, tokenizer = load_model(str(apply_model.out_dir), "cpu", "float32", adapter=str(lora_run.out_dir))
    base, _ = load_model(str(apply_model.out_dir), "cpu", "float32")
    trained = logits_of(lora_run.model, tokenizer)
    assert torch.allclose(logits_of(loaded, tokenizer), trained, atol=1e-6)
    assert not torch.allclose(logits_of(base, tokenizer), trained, atol=1e-2)  # the adapter does something


def test_merge_keeps_logits_and_leaves_no_lora_layers(lora_run, tmp_path_factory):
    from peft.tuners.lora import LoraLayer

    out = tmp_path_factory.getbasetemp() / "merged"
    merge_adapter(lora_run.out_dir, out)
    merged, tokenizer = load_model(str(out), "cpu", "float32")
    assert not any(isinstance(m, LoraLayer) or "lora" in name for name, m in merged.named_modules())
    assert torch.allclose(logits_of(merged, tokenizer), logits_of(lora_run.model, tokenizer), atol=1e-4)
    edit = ("count = 10\n", "count = 20\n")
    assert apply_edit(merged, tokenizer, *edit).token_ids == apply_edit(lora_run.model, tokenizer, *edit).token_ids


def test_resume_continues_from_the_saved_step(apply_model, tmp_path):
    train_file = write_jsonl(tmp_path / "train.jsonl", ADAPTER_RECORDS * 2)
    config = config_for(apply_model.out_dir, train_file, learning_rate=1e-2, lora_dropout=0.1, batch_size=1,
                        grad_accum=2, max_steps=4, save_every=2, log_every=1)
    straight = train(config, tmp_path / "straight")
    resumed = train(config, tmp_path / "resumed", resume=tmp_path / "straight")  # takes checkpoint-000002
    assert resumed.steps == 4
    log = json.loads((tmp_path / "resumed" / "metrics.json").read_text())["log"]
    assert [e["step"] for e in log] == [1, 2, 3, 4]
    assert log == json.loads((tmp_path / "straight" / "metrics.json").read_text())["log"][:2] + log[2:]
    straight_weights = dict(straight.model.named_parameters())
    for name, param in resumed.model.named_parameters():
        assert torch.allclose(param, straight_weights[name], atol=1e-7), name
    with pytest.raises(UsageError, match="lora mode"):
        train(dataclasses.replace(config, mode="full"), tmp_path / "x", resume=tmp_path / "straight")


def test_init_adapter_starts_from_a_trained_adapter_with_a_fresh_optimizer(lora_run, apply_model, tmp_path,
                                                                           monkeypatch):
    """A run that starts from ``lora_run``'s adapter has its weights (and rank, whatever the config
    says) before the first update: with no learning rate it keeps them exactly; with one, its first
    loss is already the trained adapter's, far below a fresh adapter's."""
    train_file = write_jsonl(tmp_path / "train.jsonl", ADAPTER_RECORDS)
    kept = train(config_for(apply_model.out_dir, train_file, init_adapter=str(lora_run.out_dir), lora_rank=4,
                            learning_rate=0.0, max_steps=1), tmp_path / "kept")
    _, tokenizer = load_model(str(apply_model.out_dir), "cpu", "float32")
    assert torch.allclose(logits_of(kept.model, tokenizer), logits_of(lora_run.model, tokenizer), atol=1e-6)
    metrics = json.loads((tmp_path / "kept" / "metrics.json").read_text())
    assert [e["step"] for e in metrics["log"]] == [1]
    assert metrics["trainable_parameters"] == sum(p.numel() for n, p in lora_run.model.named_parameters()
                                                  if "lora_" in n)  # rank 8, the adapter's
    # the start's own training is recorded, so a release of this run says how that adapter was trained
    assert metrics["init_adapter"] == {"name": str(lora_run.out_dir), **training_record(lora_run.out_dir)}
    assert metrics["init_adapter"]["train_config"]["lora_rank"] == 8
    fresh = train(config_for(apply_model.out_dir, train_file, learning_rate=2e-3, max_steps=1), tmp_path / "fresh")
    onward = train(config_for(apply_model.out_dir, train_file, init_adapter=str(lora_run.out_dir),
                              learning_rate=2e-3, max_steps=1), tmp_path / "onward")
    first = [json.loads((tmp_path / run / "metrics.json").read_text())["log"][0]["loss"] for run in ("fresh", "onward")]
    assert first[1] < 0.1 * first[0]
    assert fresh.steps == onward.steps == 1
    assert json.loads((tmp_path / "fresh" / "metrics.json").read_text())["init_adapter"] is None
    with pytest.raises(UsageError, match="no LoRA adapter there"):
        train(config_for(apply_model.out_dir, train_file, init_adapter=str(tmp_path), max_steps=1), tmp_path / "x")
    with pytest.raises(UsageError, match="mode: full"):
        config_for(apply_model.out_dir, train_file, init_adapter=str(lora_run.out_dir), mode="full")
    monkeypatch.setattr(bundled, "ADAPTER_DIR", lora_run.out_dir)  # standing in for the shipped adapter
    assert initial_adapter("fastapply-small") == lora_run.out_dir
    # the same from the command line, at a learning rate and a batch order of its own
    config_file = tmp_path / "config.yaml"
    config_file.write_text(json.dumps(dataclasses.asdict(config_for(apply_model.out_dir, train_file, max_steps=1))))
    assert train_main([str(config_file), "--out", str(tmp_path / "cli"), "--init-adapter", "fastapply-small",
                       "--learning-rate", "0", "--seed", "7"]) == 0
    recorded = json.loads((tmp_path / "cli" / "train_config.json").read_text())
    assert recorded["learning_rate"] == 0.0 and recorded["seed"] == 7
    kept_weights = load_file(tmp_path / "cli" / "adapter_model.safetensors")
    assert all(torch.equal(tensor, load_file(lora_run.out_dir / "adapter_model.safetensors")[name])
               for name, tensor in kept_weights.items())
    merge_adapter(tmp_path / "cli", tmp_path / "cli-merged")
    cli, _ = load_model(str(tmp_path / "cli-merged"), "cpu", "float32")
    # merged, W + 16 BA (alpha 128, rank 8) is rounded once in float32: logits near 20 move in the 5th digit
    assert torch.allclose(logits_of(cli, tokenizer), logits_of(lora_run.model, tokenizer), rtol=0, atol=5e-4)


def test_a_checkpoint_is_saved_without_asking_the_hub_for_a_base_known_by_name(lora_run, apply_model, tmp_path,
                                                                               monkeypatch):
    """An adapter records its base as fastapply's own name (``smollm2-135m-instruct``), a directory of no
    one's: saving a checkpoint of a run that trains neither embeddings nor the output layer asks the
    model hub nothing about it and warns nothing (peft's default would, at every checkpoint)."""
    import shutil
    import warnings

    import peft.utils.save_and_load as peft_saving

    named = tmp_path / "named"
    shutil.copytree(lora_run.out_dir, named, ignore=shutil.ignore_patterns("checkpoint-*"))
    adapter_config = json.loads((named / "adapter_config.json").read_text())
    (named / "adapter_config.json").write_text(json.dumps({**adapter_config,
                                                           "base_model_name_or_path": "smollm2-135m-instruct"}))
    asked = []
    monkeypatch.setattr(peft_saving, "check_file_exists_on_hf_hub", lambda *args, **kwargs: asked.append(args))
    train_file = write_jsonl(tmp_path / "train.jsonl", ADAPTER_RECORDS)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Could not find a config file")
        train(config_for(apply_model.out_dir, train_file, init_adapter=str(named), max_steps=2, save_every=1),
              tmp_path / "run")
    assert asked == []
    assert (tmp_path / "run" / "checkpoint-000001" / "adapter_model.safetensors").is_file()
    resumed = train(config_for(apply_model.out_dir, train_file, init_adapter=str(named), max_steps=2),
                    tmp_path / "resumed", resume=tmp_path / "run" / "checkpoint-000001")
    assert resumed.steps == 2
    started = [json.loads((tmp_path / run / "metrics.json").read_text())["init_adapter"] for run in ("run", "resumed")]
    assert started[0] == started[1] and started[0]["name"] == str(named)
    saved = load_file(tmp_path / "run" / "adapter_model.safetensors")
    assert saved and all("lora_" in name for name in saved)  # the adapter alone, no embedding copied


# -- the CLI ------------------------------------------------------------------------------------

def test_cli_with_adapter_and_with_merged_checkpoint_agree(lora_run, apply_model, tmp_path):
    out = tmp_path / "merged"
    merge_adapter(lora_run.out_dir, out)
    source = tmp_path / "settings.py"
    source.write_text("count = 10\n")
    common = [str(source), "--edit", "count = 20\n", "--device", "cpu", "--dtype", "float32", "--json"]
    runner = CliRunner()
    with_adapter = runner.invoke(app, [*common, "--model", str(apply_model.out_dir), "--adapter", str(lora_run.out_dir)])
    merged = runner.invoke(app, [*common, "--model", str(out)])
    assert with_adapter.exit_code == 0, with_adapter.output
    assert merged.exit_code == 0, merged.output
    a, b = json.loads(with_adapter.stdout), json.loads(merged.stdout)
    assert a["text"] == b["text"] == "count = 20\n"  # the adapter's edit, learnt
    assert a["stats"]["tokens"] == b["stats"]["tokens"]  # (passes depend on measured timings, so may differ)
    source.write_text("x = 1\n")  # the fully fine-tuned model alone applies its own edits
    plain = runner.invoke(app, [str(source), "--edit", "x = 2\n", "--device", "cpu", "--model", str(apply_model.out_dir)])
    assert (plain.exit_code, plain.stdout) == (0, "x = 2\n")


def test_cli_reports_a_missing_adapter(apply_model, tmp_path):
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    result = CliRunner().invoke(app, [str(source), "--edit", "x = 2", "--model", str(apply_model.out_dir),
                                      "--adapter", str(tmp_path / "nowhere"), "--device", "cpu"])
    assert result.exit_code == 1 and "adapter path" in result.output


def test_edit_weight_marks_the_tokens_that_apply_the_edit(tokenizer):
    preset = get_preset("default")
    record = {"original": "alpha = 1\nbeta = 2\n", "update": "beta = 3\n", "instruction": "",
              "expected": "alpha = 1\nbeta = 3\n"}
    example = build_example(tokenizer, preset, record, edit_weight=4.0)
    answer = answer_ids(tokenizer, preset, record["expected"])
    assert len(example.weights) == len(answer) and set(example.weights) == {1.0, 4.0}
    edited = tokenizer.decode([t for t, w in zip(answer, example.weights) if w == 4.0])
    assert "3" in edited and "alpha" not in edited  # the change, not the copied lines
    assert build_example(tokenizer, preset, record).weights == ()  # weight 1: no per-token weights


def test_token_batched_training_resumes_like_an_uninterrupted_run(apply_model, tmp_path):
    train_file = write_jsonl(tmp_path / "train.jsonl", ADAPTER_RECORDS * 3)
    config = config_for(apply_model.out_dir, train_file, learning_rate=1e-2, batch_tokens=600, grad_accum=1,
                        max_steps=4, save_every=2, log_every=1)
    straight = train(config, tmp_path / "straight")
    resumed = train(config, tmp_path / "resumed", resume=tmp_path / "straight")
    log = json.loads((tmp_path / "resumed" / "metrics.json").read_text())["log"]
    assert [e["step"] for e in log] == [1, 2, 3, 4] and math.isfinite(straight.train_loss)
    straight_weights = dict(straight.model.named_parameters())
    for name, param in resumed.model.named_parameters():
        assert torch.allclose(param, straight_weights[name], atol=1e-7), name


def test_edit_weighted_training_runs_and_trains_differently(apply_model, tmp_path):
    train_file = write_jsonl(tmp_path / "train.jsonl", ADAPTER_RECORDS)
    plain = train(config_for(apply_model.out_dir, train_file, learning_rate=1e-2, max_steps=3), tmp_path / "p")
    weighted = train(config_for(apply_model.out_dir, train_file, learning_rate=1e-2, max_steps=3, edit_weight=5.0),
                     tmp_path / "w")
    assert math.isfinite(weighted.train_loss)
    plain_weights = dict(plain.model.named_parameters())
    assert any(not torch.allclose(p, plain_weights[n]) for n, p in weighted.model.named_parameters()
               if p.requires_grad)


def test_bfloat16autocast_context_trains_on_cpu_with_float32_adapter_weights(apply_model, tmp_path):
    train_file = write_jsonl(tmp_path / "train.jsonl", ADAPTER_RECORDS)
    run = train(config_for(apply_model.out_dir, train_file, learning_rate=1e-2, max_steps=8, autocast="bfloat16"),
                tmp_path / "bf16")
    losses = [e["loss"] for e in json.loads((tmp_path / "bf16" / "metrics.json").read_text())["log"]]
    assert all(math.isfinite(loss) for loss in losses) and losses[-1] < losses[0]
    trainable = [p for p in run.model.parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 for p in trainable)
    with pytest.raises(UsageError, match="autocast"):
        config_for(apply_model.out_dir, train_file, autocast="fp8")
    with autocast_context("cpu", "bfloat16"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16



def test_auto_autocast_takes_bfloat16_only_on_a_cpu_that_computes_it_natively(tmp_path, monkeypatch, caplog):
    """Emulated, bfloat16 autocast made a LoRA step of fastapply-small over 6x slower than float32 on a CPU
    with AVX2 alone; "auto" keeps such a CPU in float32, and asking for bfloat16 there warns."""
    import finetune.train as train_module

    info = tmp_path / "cpuinfo"
    info.write_text("flags\t\t: fpu sse2 avx2 fma\n")
    assert not train_module.cpu_has_bfloat16(str(info)) and not train_module.cpu_has_bfloat16(str(tmp_path / "no"))
    info.write_text("flags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n")
    assert train_module.cpu_has_bfloat16(str(info))
    for native in (False, True):
        monkeypatch.setattr(train_module, "cpu_has_bfloat16", lambda: native)
        caplog.clear()
        with autocast_context("cpu", "auto"):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == (torch.bfloat16 if native else torch.float32)
        with autocast_context("cpu", "off"):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
        with autocast_context("cpu", "bfloat16"):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
        assert ("no native bfloat16" in caplog.text) == (not native)


# -- choosing a checkpoint: finetune.score ------------------------------------------------------

def test_score_gives_each_checkpoint_its_misses_per_record(lora_run, apply_model, tmp_path, capsys):
    """The adapter (on the base its config names) and the full checkpoint under it, scored on both
    training sets: per record, the misses a teacher-forced pass of each gives, and the records they
    disagree on."""
    records = [dict(r, id=f"adapter-{i}") for i, r in enumerate(ADAPTER_RECORDS)] + \
        [dict(r, id=f"apply-{i}") for i, r in enumerate(APPLY_RECORDS)]
    path, out = write_jsonl(tmp_path / "edits.jsonl", records), tmp_path / "score.json"
    checkpoints = [str(lora_run.out_dir), str(apply_model.out_dir)]
    assert score_main([*checkpoints, "--records", str(path), "--out", str(out)]) == 0
    scored = json.loads(out.read_text())["checkpoints"]
    assert scored[checkpoints[0]]["misses"]["adapter-0"] == scored[checkpoints[0]]["misses"]["adapter-1"] == 0
    _, tokenizer = load_model(str(apply_model.out_dir), "cpu", "float32")
    expected = evaluate(apply_model.model, [build_example(tokenizer, get_preset("default"), r) for r in records],
                        pad_id=tokenizer.pad_token_id or 0)
    assert list(scored[checkpoints[1]]["misses"].values()) == list(expected.misses)
    assert scored[checkpoints[1]]["greedy_exact"] == expected.greedy_exact == list(expected.misses).count(0)
    printed = capsys.readouterr().out
    differing = disagreements({c: scored[c]["misses"] for c in checkpoints})
    assert f"records the checkpoints disagree on ({len(differing)})" in printed
    assert all(line in printed for line in differing)
    assert f"records by their misses: {by_misses(expected.misses)}" in printed

    # --where 2: each missing record's first two misses, the tokens in text, as a teacher-forced pass finds them
    assert score_main([checkpoints[1], "--records", str(path), "--where", "2", "--out", str(out)]) == 0
    where = json.loads(out.read_text())["checkpoints"][checkpoints[1]]["where"]
    missing = {r["id"]: found for r, found in zip(records, expected.where) if found}
    assert missing, "the tiny apply model writes every record exactly: nothing to show"
    assert {name: [m["at"] for m in told] for name, told in where.items()} == \
        {name: [m.at for m in found[:2]] for name, found in missing.items()}
    name, first = next(iter(missing.items()))
    assert where[name][0]["wanted"] == tokenizer.decode([first[0].wanted])
    assert where[name][0]["chosen"] == tokenizer.decode([first[0].chosen]) != where[name][0]["wanted"]
    assert where[name][0]["regret"] == round(first[0].regret, 2) > 0
    assert f"{name} ({len(first)} missed): token {first[0].at} wants {where[name][0]['wanted']!r}" in capsys.readouterr().out

    # one line per checkpoint; --max-lines leaves out the two-line file
    assert score_main([checkpoints[0], "--records", str(path), "--max-lines", "1", "--out", str(out)]) == 0
    assert "apply-1" not in json.loads(out.read_text())["checkpoints"][checkpoints[0]]["misses"]
    assert score_main([checkpoints[0], "--records", str(path), "--max-lines", "0"]) == 1
    assert capsys.readouterr().err.strip() == "finetune.score: error: no records to score (check --records and --max-lines)"


def test_records_are_scored_with_markers_as_fastapply_shows_them():
    """A marker at column 0 standing for an indented body is scored indented, as the model reads it."""
    record = {"id": "r", "language": "python", "original": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
              "update": "def f():\n    return 3\n\n\ndef g():\n# ... existing code ...\n",
              "instruction": "", "expected": "def f():\n    return 3\n\n\ndef g():\n    return 2\n"}
    assert as_shown(record) == dict(record, update=record["update"].replace("\n# ...", "\n    # ..."))
    assert as_shown(dict(record, language=None)) == dict(record, language=None)


def test_records_are_scored_focused_as_fastapply_shows_them():
    """The model is scored on the window fastapply cuts around the edit (``focus.py``), the expected file
    cut alike; whole with ``focused=False``, and whole where the expected file changes outside the window."""
    helpers = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(20))
    original = helpers + "def target(x):\n    return x\n"
    update = "# ... existing code ...\ndef target(x):\n    return -x\n"
    record = {"id": "r", "language": "python", "original": original, "update": update, "instruction": "",
              "expected": original.replace("    return x\n", "    return -x\n")}
    shown = as_shown(record)
    assert shown["original"] == original[original.index("def helper_19"):]
    assert shown["expected"] == shown["original"].replace("    return x\n", "    return -x\n")
    assert as_shown(record, focused=False) == dict(record, update=update)
    elsewhere = dict(record, expected=record["expected"].replace("x + 3\n", "x + 33\n"))  # a change the update hides
    assert as_shown(elsewhere) == dict(elsewhere, update=update)


def test_records_are_counted_by_their_misses():
    assert by_misses([0, 1, 1, 5]) == "0: 1, 1: 2, 2: 0, 3: 0, more: 1"
    assert by_misses([], most=1) == "0: 0, 1: 0, more: 0"


def test_score_lists_the_records_checkpoints_disagree_on():
    misses = {"a": {"t1": 0, "t2": 1, "t3": 0}, "b": {"t1": 2, "t2": 1, "t3": 0}, "c": {"t1": 0, "t2": 3, "t3": 0}}
    assert disagreements(misses) == ["t1: a 0, b 2, c 0"]
    assert disagreements({"a": {"t1": 0}}) == []


# -- adapter soups -------------------------------------------------------------------------------

def _halved_and_negated(adapter, other):
    """A second adapter of ``adapter``'s base: the same ``A``, its ``B`` halved and negated."""
    from safetensors.torch import save_file

    other.mkdir()
    (other / "adapter_config.json").write_text((adapter / "adapter_config.json").read_text())
    weights = load_file(adapter / "adapter_model.safetensors")
    save_file({k: (-0.5 * v if "lora_B" in k else v).contiguous() for k, v in weights.items()},
              other / "adapter_model.safetensors")
    return other


def test_a_soup_changes_the_weights_by_the_weighted_sum_of_its_adapters_changes(lora_run, tmp_path):
    """Two adapters of one base (the trained one, and it with its B halved and negated), averaged 0.3 /
    0.7: merged into the base, the soup's weights are 0.3 and 0.7 of the two merged models' weights,
    each tensor; it records its parts for the release."""
    other = _halved_and_negated(lora_run.out_dir, tmp_path / "other")
    config = soup([lora_run.out_dir, other], [0.3, 0.7], tmp_path / "soup")
    assert config["r"] == 2 * json.loads((lora_run.out_dir / "adapter_config.json").read_text())["r"]
    record = json.loads((tmp_path / "soup" / "soup.json").read_text())
    assert record["weights"] == [0.3, 0.7]
    assert record["training"][0]["train_config"] == json.loads((lora_run.out_dir / "train_config.json").read_text())
    assert record["training"][1] == {}
    base = adapter_base(lora_run.out_dir)
    merged = [load_model(base, "cpu", "float32", adapter=str(a))[0].merge_and_unload().state_dict()
              for a in (lora_run.out_dir, other, tmp_path / "soup")]
    for name, tensor in merged[2].items():
        assert torch.allclose(tensor, 0.3 * merged[0][name] + 0.7 * merged[1][name], atol=1e-5), name
    assert not torch.allclose(merged[2]["model.layers.0.self_attn.q_proj.weight"],
                              merged[0]["model.layers.0.self_attn.q_proj.weight"])


def _changes(directory):
    """Each adapted layer's change ``B @ A`` (before the ``alpha / r`` scale), in float64."""
    tensors = load_file(directory / "adapter_model.safetensors")
    return {name: tensors[name.replace("lora_A", "lora_B")].double() @ tensors[name].double()
            for name in tensors if "lora_A" in name}


def test_a_soup_at_a_lower_rank_keeps_each_change_where_it_fits_and_its_best_approximation_where_not(lora_run, tmp_path):
    """Two adapters with the same ``A`` (the trained one, and it with its B halved and negated) sum to a
    change of the trained rank: the soup at that rank is the full soup, exactly. One adapter at rank 1
    is each layer's best rank-1 approximation (its largest singular direction), with the same
    ``alpha / r``, and the share of each change kept is recorded."""
    trained = json.loads((lora_run.out_dir / "adapter_config.json").read_text())
    other = _halved_and_negated(lora_run.out_dir, tmp_path / "other")
    soup([lora_run.out_dir, other], [0.3, 0.7], tmp_path / "full")
    full = _changes(tmp_path / "full")
    config = soup([lora_run.out_dir, other], [0.3, 0.7], tmp_path / "kept", rank=trained["r"])
    assert config["r"] == trained["r"] and config["lora_alpha"] == trained["lora_alpha"]
    kept = _changes(tmp_path / "kept")
    for name, change in full.items():
        assert torch.allclose(kept[name], change, atol=1e-6), name
    assert json.loads((tmp_path / "kept" / "soup.json").read_text())["kept"]["norm_share_min"] > 0.999999

    assert soup_main([str(lora_run.out_dir), "--weights", "1", "--rank", "1", "--out", str(tmp_path / "one")]) == 0
    config = json.loads((tmp_path / "one" / "adapter_config.json").read_text())
    assert config["r"] == 1 and config["lora_alpha"] / 1 == trained["lora_alpha"] / trained["r"]
    shares = []
    for name, change in _changes(lora_run.out_dir).items():
        u, s, vh = torch.linalg.svd(change)
        best = s[0] * torch.outer(u[:, 0], vh[0])
        assert torch.allclose(_changes(tmp_path / "one")[name], best, atol=1e-6), name
        shares.append(float(s[0] / s.norm()))
    record = json.loads((tmp_path / "one" / "soup.json").read_text())
    assert record["rank"] == 1
    assert record["kept"]["norm_share_min"] == pytest.approx(min(shares), abs=1e-5) and min(shares) < 0.99


def test_a_soup_refuses_weights_that_do_not_sum_to_one_and_adapters_that_differ(lora_run, tmp_path):
    with pytest.raises(UsageError, match="sum to 1"):
        soup([lora_run.out_dir, lora_run.out_dir], [0.5, 0.6], tmp_path / "a")
    other = tmp_path / "other"
    other.mkdir()
    config = json.loads((lora_run.out_dir / "adapter_config.json").read_text())
    (other / "adapter_config.json").write_text(json.dumps(dict(config, lora_alpha=config["lora_alpha"] * 2)))
    with pytest.raises(UsageError, match="does not match"):
        soup([lora_run.out_dir, other], [0.5, 0.5], tmp_path / "b")
    assert soup_main([str(lora_run.out_dir), str(tmp_path / "missing"), "--weights", "0.5", "0.5",
                      "--out", str(tmp_path / "c")]) == 2
    with pytest.raises(UsageError, match="two or more adapters"):
        soup([lora_run.out_dir], [1.0], tmp_path / "d")
    with pytest.raises(UsageError, match="at least 1"):
        soup([lora_run.out_dir], [1.0], tmp_path / "e", rank=0)


def test_unseen_leaves_out_what_a_run_trained_on_and_what_never_fit(apply_model, tmp_path):
    """A run of one step of two micro-batches trained on the first two examples of its seeded stream;
    the other four are left, in the file's order; a record longer than ``max_length`` was never
    trainable and is not offered either. After a whole epoch nothing is left."""
    records = [{"original": f"n = {i}\n", "update": f"n = {i + 1}\n", "instruction": "", "expected": f"n = {i + 1}\n"}
               for i in range(6)]
    long_file = "value = 12345\n" * 300
    records.append({"original": long_file, "update": "value = 1\n", "instruction": "", "expected": long_file})
    train_file = write_jsonl(tmp_path / "train.jsonl", records)
    config = config_for(apply_model.out_dir, train_file, batch_size=1, grad_accum=2, max_steps=1, learning_rate=0.0)
    assert train(config, tmp_path / "run").steps == 1
    stream = micro_batches(6, 1, config.seed)
    drawn = set(next(stream) + next(stream))
    left = unseen(tmp_path / "run")
    assert len(left) == 4 and left == [r for i, r in enumerate(records[:6]) if i not in drawn]
    assert unseen_main([str(tmp_path / "run"), "--out", str(tmp_path / "left.jsonl.gz")]) == 0
    assert read_records(tmp_path / "left.jsonl.gz") == left
    train(dataclasses.replace(config, max_steps=3), tmp_path / "epoch")
    assert unseen(tmp_path / "epoch") == []
    with pytest.raises(UsageError, match="not a training run"):
        unseen(tmp_path)


def test_a_random_shape_takes_an_existing_tokenizer_and_saves_in_bfloat16(tmp_path, monkeypatch):
    """``finetune.scratch --tokenizer`` gives a random model fastapply-small's tokenizer (its vocabulary and
    special ids), so a bigger shape reads the shipped model's prompts and answers token for token."""
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from finetune.scratch import main as scratch_main

    shipped = Path(__file__).resolve().parents[1] / "fastapply" / "models" / "fastapply-small"  # its tokenizer files
    monkeypatch.setattr(sys, "argv", ["scratch", "--out", str(tmp_path / "m"), "--shape", "tiny",
                                      "--tokenizer", str(shipped), "--dtype", "bfloat16"])
    scratch_main()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "m")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "m", dtype="auto")
    shipped_tokenizer = AutoTokenizer.from_pretrained(shipped)
    assert tokenizer.get_vocab() == shipped_tokenizer.get_vocab()
    assert model.config.vocab_size == len(shipped_tokenizer)
    assert model.config.eos_token_id == shipped_tokenizer.eos_token_id
    assert model.dtype == torch.bfloat16
