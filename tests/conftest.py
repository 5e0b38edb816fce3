"""Shared fixtures: tiny tokenizers and Llama checkpoints built in-process, saved to disk and loaded
through the same path a user's checkpoint takes. No network."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest

from finetune.scratch import new_llama, save_checkpoint, stdlib_corpus, train_tokenizer


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own fastapply cache directory (measured verify costs)."""
    monkeypatch.setenv("FASTAPPLY_CACHE_DIR", str(tmp_path_factory.mktemp("fastapply-cache")))


@pytest.fixture(scope="session")
def tokenizer():
    import torch

    torch.set_num_threads(2)
    return train_tokenizer(stdlib_corpus(60), vocab_size=1024)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizer):
    """Path of a saved tiny random Llama (2 layers, hidden 64) with its tokenizer."""
    return save_checkpoint(new_llama(len(tokenizer), "tiny", seed=0), tokenizer,
                           tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_model(tiny_checkpoint):
    """(model, tokenizer) loaded from ``tiny_checkpoint`` by ``fastapply.target.load_model``."""
    from fastapply.target import load_model

    return load_model(str(tiny_checkpoint), device="cpu", dtype="float32")


SAMPLE_PY = '''\
import os
import sys


def read_config(path):
    """Read a key=value config file."""
    config = {}
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            config[key.strip()] = value.strip()
    return config


def main(argv):
    if len(argv) < 2:
        print("usage: tool CONFIG")
        return 2
    config = read_config(argv[1])
    for key in sorted(config):
        print(key, config[key])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

SAMPLE_UPDATE = '''\
# ... existing code ...
def main(argv):
    if len(argv) < 2:
        print("usage: tool CONFIG", file=sys.stderr)
        return 2
    config = read_config(argv[1])
    verbose = os.environ.get("TOOL_VERBOSE") == "1"
    for key in sorted(config):
        if verbose:
            print("reading", key)
        print(key, config[key])
    return 0
# ... existing code ...
'''

SAMPLE_EXPECTED = SAMPLE_PY.replace('''        print("usage: tool CONFIG")
''', '''        print("usage: tool CONFIG", file=sys.stderr)
''').replace('''    config = read_config(argv[1])
    for key in sorted(config):
''', '''    config = read_config(argv[1])
    verbose = os.environ.get("TOOL_VERBOSE") == "1"
    for key in sorted(config):
        if verbose:
            print("reading", key)
''')
