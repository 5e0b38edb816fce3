"""Shared fixtures: tiny tokenizers and Llama checkpoints built in-process, saved to disk and loaded
through the same path a user's checkpoint takes. No network."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest
import torch

from finetune.scratch import new_llama, save_checkpoint, stdlib_corpus, train_tokenizer


# The models here are tiny: one thread is faster than two, and far faster on a busy machine.
torch.set_num_threads(1)


# The user's cache, where `fastapply model download` put the base (tests/test_shipped_model.py reads it).
USER_CACHE = os.environ.get("FASTAPPLY_CACHE_DIR", os.path.expanduser("~/.cache/fastapply"))


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own fastapply cache directory (measured verify costs, fetched models)."""
    monkeypatch.setenv("FASTAPPLY_CACHE_DIR", str(tmp_path_factory.mktemp("fastapply-cache")))


@pytest.fixture(autouse=True)
def _no_bundled_model(tmp_path_factory, monkeypatch):
    """Tests see no default model unless they ask for it: what a command does without --model must not
    depend on whether this checkout carries the fastapply-small adapter (tests/test_shipped_model.py)."""
    from fastapply import bundled

    monkeypatch.setattr(bundled, "ADAPTER_DIR", tmp_path_factory.getbasetemp() / "no-bundled-model")


@pytest.fixture(scope="session")
def tokenizer():
    return train_tokenizer(stdlib_corpus(60), vocab_size=1024)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizer):
    """Path of a saved tiny random Llama (2 layers, hidden 64) with its tokenizer."""
    return save_checkpoint(new_llama(len(tokenizer), "tiny", seed=0), tokenizer,
                           tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_model(tiny_checkpoint):
    """(model, tokenizer) loaded from ``tiny_checkpoint`` by ``fastapply.loading.load_model``."""
    from fastapply.loading import load_model

    return load_model(str(tiny_checkpoint), device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def sample_model(tmp_path_factory, tokenizer):
    """(model, tokenizer, path): a tiny Llama trained in seconds on edits of ``samples.SMALL_PY``, so
    that it writes that file back (a model that copies) and closes its answers."""
    import random

    from fastapply.prompt import answer_ids, get_preset, prompt_ids
    from fastapply.snippet import make_snippet
    from fastapply.loading import load_model
    from finetune.echo import Example, edit_window, train
    from tests.samples import SMALL_PY

    rng = random.Random(1)
    preset = get_preset("default")
    lines = SMALL_PY.splitlines(keepends=True)
    examples = []
    for _ in range(64):
        edited = edit_window(lines, rng, rng.choice(["    pass\n", "    return None\n", "# note\n"]))
        update = make_snippet(SMALL_PY, edited, "python", context=2)
        examples.append(Example(prompt_ids(tokenizer, preset, SMALL_PY, update),
                                answer_ids(tokenizer, preset, edited)))
    model = new_llama(len(tokenizer), "tiny", seed=1)
    train(model, examples, steps=200, batch_size=4, lr=1e-2)
    path = save_checkpoint(model, tokenizer, tmp_path_factory.mktemp("sample-llama"))
    lm, tok = load_model(str(path), device="cpu", dtype="float32")
    return lm, tok, path
