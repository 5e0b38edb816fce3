"""Grouped-query attention under a mask, attended in place (fastapply/attention.py): the same logits as
transformers' sdpa, no copy of the cache's keys and values, and only where it saves one."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache
from transformers.integrations import sdpa_attention

from fastapply.attention import NAME, use_grouped_attention
from fastapply.decode import speculative_generate
from fastapply.draft import DraftContext, make_drafter
from fastapply.loading import cache_keyword
from fastapply.target import HFTarget
from finetune.scratch import new_llama

PROMPT = [5, 9, 12, 40, 7, 7, 3, 88, 41, 19, 5, 9, 12, 40, 6, 2]


def passes(model):
    """Logits of a prompt, then of 5 tokens after it (a causal mask), then of 3 tree nodes after it."""
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        cached = {cache_keyword(model): cache, "use_cache": True}
        first = model(input_ids=torch.tensor([PROMPT]), **cached).logits
        chunk = model(input_ids=torch.tensor([[4, 8, 15, 16, 23]]), **cached).logits
        cache.crop(-5)
        base = len(PROMPT)
        mask = torch.zeros(1, 1, 3, base + 3)
        mask[0, 0, 1, base + 2] = mask[0, 0, 2, base + 1] = torch.finfo(torch.float32).min  # two siblings
        tree = model(input_ids=torch.tensor([[4, 8, 9]]), attention_mask=mask, **cached,
                     position_ids=torch.tensor([[base, base + 1, base + 1]])).logits
    return first, chunk, tree


def test_grouped_attention_gives_sdpas_logits_without_copying_keys_and_values(monkeypatch):
    model = new_llama(300, "tiny", seed=1)  # 4 query heads, 2 key-value heads
    before = passes(model)
    assert use_grouped_attention(model) and model.config._attn_implementation == NAME

    def no_copy(*args, **kwargs):
        raise AssertionError("the keys and values were copied per query head")

    monkeypatch.setattr(sdpa_attention, "repeat_kv", no_copy)
    after = passes(model)
    for a, b in zip(before, after):
        assert torch.equal(a, b)


def test_models_without_grouped_heads_keep_their_attention():
    model = new_llama(300, "small", seed=1)  # as many key-value heads as query heads
    assert not use_grouped_attention(model) and model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("seed", [0, 1])
def test_a_target_on_the_cpu_decodes_greedily_with_grouped_attention(seed):
    model = new_llama(300, "tiny", seed=seed)
    with torch.no_grad():
        reference = model.generate(torch.tensor([PROMPT]), attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
                                   max_new_tokens=30, do_sample=False, eos_token_id=None, pad_token_id=0)[0, len(PROMPT):]
    target = HFTarget(model)
    assert model.config._attn_implementation == NAME
    drafter = make_drafter("fastapply", DraftContext(prompt_ids=PROMPT, prediction_ids=PROMPT * 3))
    tokens, stats = speculative_generate(target, drafter, PROMPT, 30)
    assert tokens == reference.tolist() and max(stats.proposed) > 0  # multi-token verifies, under a mask
