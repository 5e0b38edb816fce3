"""Fixtures for the serving, client, batch and hook tests: a tiny Llama that has learnt one edit.

A random tiny model never closes its answer, so every apply through it is refused as truncated. The
``apply_checkpoint`` model is the tiny Llama trained on one example until its greedy answer to that
prompt is exactly the expected file (a few seconds on CPU): with it, the whole path (CLI, server,
hook) produces a real, checkable result. Import the fixtures into a test module to use them.
"""

from __future__ import annotations

import pytest

ORIGINAL = 'def greet(name):\n    return "hello " + name\n\n\nprint(greet("git"))\n'
UPDATE = '# ... existing code ...\n    return "hello, " + name + "!"\n# ... existing code ...\n'
EXPECTED = 'def greet(name):\n    return "hello, " + name + "!"\n\n\nprint(greet("git"))\n'


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("fastapply-cache-serving")


@pytest.fixture(autouse=True)
def _private_cache(_session_cache, monkeypatch):
    """Replaces conftest's per-test cache with one for the session (used by the subprocesses)."""
    monkeypatch.setenv("FASTAPPLY_CACHE_DIR", str(_session_cache))


@pytest.fixture(autouse=True)
def _fixed_verify_cost(monkeypatch):
    """Verify costs of a fixed, GPU-like shape (a pass of k draft tokens costs 1 + k/100) instead of ones
    measured on a busy CPU, so the draft lengths, and so the passes and accepted prediction tokens that
    the tests check, are the same on every run. The output does not depend on them."""
    from fastapply.target import HFTarget

    monkeypatch.setattr(HFTarget, "cost", lambda self, k: 1.0 + k / 100)


def learn_example(tokenizer, original: str = ORIGINAL, update: str = UPDATE, expected: str = EXPECTED,
                  steps: int = 150):
    """A tiny Llama trained on one example until its greedy answer to (original, update) with the default
    preset is exactly ``expected``, whether the prompt is tokenized as the local path does
    (``prompt_ids``) or as the server's chat route does (``chat_ids`` of the client's messages); None
    if it has not learnt it in ``steps``."""
    import torch

    from fastapply.prompt import answer_ids, chat_ids, get_preset, prompt_ids
    from finetune.echo import Example, train
    from finetune.scratch import new_llama

    preset = get_preset("default")
    answer = answer_ids(tokenizer, preset, expected)
    prompts = {tuple(prompt_ids(tokenizer, preset, original, update)),
               tuple(chat_ids(tokenizer, prompt_messages(original, update)))}
    examples = [Example(list(prompt), answer) for prompt in prompts]
    model = new_llama(len(tokenizer), "tiny", seed=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # this model trains several times faster on one thread than on two that contend
    try:
        train(model, examples, steps=steps, batch_size=len(examples), lr=1e-2)
        with torch.no_grad():
            for e in examples:
                ids = torch.tensor([e.prompt_ids + e.answer_ids])  # [1, S]
                choices = model(input_ids=ids).logits[0, len(e.prompt_ids) - 1:-1].argmax(-1)  # [len(answer)]
                if choices.tolist() != e.answer_ids:
                    return None
    finally:
        torch.set_num_threads(threads)
    return model


@pytest.fixture(scope="session")
def apply_checkpoint(tmp_path_factory, tokenizer):
    """Path of a tiny Llama whose greedy answer to (ORIGINAL, UPDATE) with the default preset is EXPECTED."""
    from finetune.scratch import save_checkpoint

    model = learn_example(tokenizer)
    if model is None:
        pytest.fail("the tiny model did not learn the example")
    return save_checkpoint(model, tokenizer, tmp_path_factory.mktemp("apply-llama"))


@pytest.fixture(scope="session")
def apply_model(apply_checkpoint):
    from fastapply.loading import load_model

    return load_model(str(apply_checkpoint), device="cpu", dtype="float32")


def prompt_messages(original: str = ORIGINAL, update: str = UPDATE) -> list[dict[str, str]]:
    """The chat messages fastapply's HTTP backend sends for one edit (default preset)."""
    from fastapply.prompt import get_preset

    preset = get_preset("default")
    return [{"role": "system", "content": preset.system},
            {"role": "user", "content": preset.user_message(original, update)}]
