"""Pretraining from scratch (finetune.pretrain), the release into models/ (finetune.ship) and the
bundled default model of the CLI, on a corpus of standard-library files and tiny shapes."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from finetune import pretrain
from finetune.scratch import stdlib_corpus
from finetune.ship import ship

TRAIN = ["--shape", "tiny", "--context", "64", "--batch-size", "4", "--warmup", "2", "--lr", "3e-3",
         "--device", "cpu", "--log-every", "4", "--eval-windows", "4"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A corpus directory in data.build_corpus's format: 120 standard-library modules, plus one file
    that holds the preset's tags as text."""
    out = tmp_path_factory.mktemp("corpus")
    texts = [t for t in stdlib_corpus(200) if len(t) < 60_000][:119] + ["s = '<code>x</code>'\n" * 5]
    with gzip.open(out / "corpus-00000.jsonl.gz", "wt", encoding="utf-8") as handle:
        for i, text in enumerate(texts):
            record = {"text": text, "path": f"m{i}.py", "package": "stdlib", "version": "3.11",
                      "license": "PSF-2.0", "language": "python"}
            handle.write(json.dumps(record) + "\n")
    return out, texts


@pytest.fixture(scope="module")
def tokens(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain")
    assert pretrain.main(["tokenizer", "--corpus", str(corpus[0]), "--out", str(root / "tok"),
                          "--vocab-size", "1024"]) == 0
    assert pretrain.main(["tokens", "--corpus", str(corpus[0]), "--tokenizer", str(root / "tok"),
                          "--out", str(root / "tokens")]) == 0
    return root


def _weights(directory) -> dict[str, torch.Tensor]:
    out = {}
    for shard in sorted(directory.glob("*.safetensors")):
        out.update(load_file(shard))
    return out


def _train(tokens, out, *extra) -> int:
    return pretrain.main(["train", "--tokens", str(tokens / "tokens"), "--tokenizer", str(tokens / "tok"),
                          "--out", str(out), *TRAIN, *extra])


def test_tokenizer_has_the_preset_tags_as_single_tokens(tokens):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokens / "tok")
    assert len(tok) == 1024
    as_template = tok("<code>\n</updated-code>", add_special_tokens=False)["input_ids"]
    assert tok.convert_ids_to_tokens(as_template) == ["<code>", "Ċ", "</updated-code>"]
    as_text = tok("</updated-code>", add_special_tokens=False, split_special_tokens=True)["input_ids"]
    assert len(as_text) > 1 and tok.decode(as_text) == "</updated-code>"


def test_token_files_hold_every_document_once_with_the_hundredth_held_out(tokens, corpus):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokens / "tok")
    meta = json.loads((tokens / "tokens" / "meta.json").read_text())
    texts = corpus[1]
    assert meta["train"]["documents"] == 119 and meta["valid"]["documents"] == 1
    assert meta["valid"]["bytes"] == len(texts[99].encode())
    valid = np.fromfile(tokens / "tokens" / "valid.bin", dtype=np.uint16).tolist()
    assert valid[-1] == tok.eos_token_id
    assert tok.decode(valid[:-1]) == texts[99]
    train_tokens = (tokens / "tokens" / "train.bin").stat().st_size // 2
    assert train_tokens == meta["train"]["tokens"]
    # the file whose text holds the tags was encoded as text: no tag token anywhere in it
    train = np.fromfile(tokens / "tokens" / "train.bin", dtype=np.uint16).tolist()
    tag_ids = set(tok.convert_tokens_to_ids(["<code>", "</code>"]))
    assert tok.decode(train[-len(texts[-1]):]).endswith(texts[-1] + "</s>")
    assert not tag_ids & set(train[-len(texts[-1]):])


def test_resumed_run_ends_with_the_weights_of_an_unbroken_one(tokens, tmp_path):
    assert _train(tokens, tmp_path / "straight", "--steps", "8") == 0
    assert _train(tokens, tmp_path / "broken", "--steps", "8", "--stop-at", "4") == 0
    assert json.loads((tmp_path / "broken" / "pretrain.json").read_text())["step"] == 4
    assert _train(tokens, tmp_path / "broken", "--steps", "8", "--resume") == 0
    straight, broken = _weights(tmp_path / "straight"), _weights(tmp_path / "broken")
    assert straight.keys() == broken.keys()
    assert all(torch.equal(straight[k], broken[k]) for k in straight)
    summary = json.loads((tmp_path / "broken" / "pretrain.json").read_text())
    assert summary["step"] == 8 and summary["done"] and [e["step"] for e in summary["evals"]] == [4, 8]


def test_weights_only_resume_goes_on_from_the_saved_step(tokens, tmp_path):
    assert _train(tokens, tmp_path / "run", "--steps", "6", "--stop-at", "3") == 0
    (tmp_path / "run" / "trainer.pt").unlink()
    assert _train(tokens, tmp_path / "run", "--steps", "6", "--resume") == 0
    summary = json.loads((tmp_path / "run" / "pretrain.json").read_text())
    assert summary["step"] == 6 and [e["step"] for e in summary["log"]] == [3, 4, 6]


def test_resume_without_a_checkpoint_is_a_usage_error(tokens, tmp_path, capsys):
    assert _train(tokens, tmp_path / "none", "--steps", "4", "--resume") == 2
    assert "holds no checkpoint" in capsys.readouterr().err


def test_pretraining_lowers_the_held_out_loss(tokens, tmp_path):
    assert _train(tokens, tmp_path / "run", "--steps", "200", "--eval-every", "100", "--lr", "1e-2",
                  "--context", "128", "--batch-size", "8", "--warmup", "10", "--log-every", "50") == 0
    summary = json.loads((tmp_path / "run" / "pretrain.json").read_text())
    losses = [e["loss"] for e in summary["log"]]
    assert losses == sorted(losses, reverse=True)  # falls window after window
    assert summary["evals"][-1]["loss"] < math.log(1024) - 1.2  # a uniform guess scores ln(1024)
    assert summary["evals"][-1]["loss"] < summary["evals"][0]["loss"]


def test_ship_writes_bfloat16_weights_that_load_and_refuses_an_oversized_release(tiny_checkpoint, tmp_path):
    from fastapply.errors import UsageError
    from fastapply.target import load_model

    size = ship(tiny_checkpoint, tmp_path / "release")
    weights = _weights(tmp_path / "release")
    assert {w.dtype for w in weights.values()} == {torch.bfloat16}
    assert size == pytest.approx(sum(w.numel() for w in weights.values()) * 2 / 1e6)
    model, tok = load_model(str(tmp_path / "release"), device="cpu", dtype="float32")
    assert next(model.parameters()).dtype == torch.float32 and len(tok) == 1024
    with pytest.raises(UsageError, match="over the 0.01 MB"):
        ship(tiny_checkpoint, tmp_path / "too-big", max_mb=0.01)


def test_cli_uses_the_bundled_model_when_no_model_is_given(tiny_checkpoint, tmp_path, monkeypatch):
    from fastapply import cli

    monkeypatch.delenv("FASTAPPLY_MODEL", raising=False)
    source = tmp_path / "a.py"
    source.write_text("def f():\n    return 1\n")
    args = [str(source), "--edit", "def f():\n    return 2\n", "--engine", "model", "--max-new-tokens", "4",
            "--force", "--json", "--device", "cpu"]
    missing = CliRunner().invoke(cli.app, args)
    assert missing.exit_code == 2 and "no model for --engine model" in missing.output
    monkeypatch.setattr(cli, "BUNDLED_MODEL", tiny_checkpoint)
    bundled = CliRunner().invoke(cli.app, args)
    assert bundled.exit_code == 0, bundled.output
    record = json.loads(bundled.stdout)
    assert record["model"] == str(tiny_checkpoint) and record["engine"] == "model"
