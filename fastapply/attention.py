"""Grouped-query attention under a mask, attended in place on a CPU.

A verify feeds several tokens after the cache, so its attention has a mask (causal over the new tokens,
or a tree's), and for a mask transformers' ``sdpa`` attention copies every layer's keys and values
once per query head of a group (``repeat_kv``) before attending. On a CPU that copy is most of a short
verify's attention: for fastapply-small (9 query and 3 key-value heads, 30 layers) at a 2,000-token
context it is about 15 ms a pass, 15% of a 16-token verify. ``scaled_dot_product_attention`` attends
the groups in place (``enable_gqa``) with the same result, bit for bit here. ``use_grouped_attention``
switches a model to that where it has grouped heads and runs ``sdpa`` on a CPU; every other case
(one query, no mask, no groups) is transformers' own ``sdpa`` unchanged.
"""

from __future__ import annotations

NAME = "fastapply_grouped_sdpa"


def grouped_sdpa_forward(module, query, key, value, attention_mask, dropout: float = 0.0,
                         scaling: float | None = None, is_causal: bool | None = None, **kwargs):
    """transformers' attention-function signature: query [B, heads, S, D], key and value [B, kv heads, L, D]
    -> ([B, S, heads, D], None)."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if attention_mask is None or groups == 1 or query.shape[2] == 1 or kwargs.get("position_bias") is not None \
            or kwargs.get("cache") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, enable_gqa=True)
    return output.transpose(1, 2).contiguous(), None


def use_grouped_attention(model) -> bool:
    """Switch ``model`` to ``grouped_sdpa_forward`` where that saves the copies: transformers' ``sdpa``
    on a CPU, grouped query heads. Whether it did."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    config = model.config
    heads, kv_heads = getattr(config, "num_attention_heads", 0), getattr(config, "num_key_value_heads", None)
    if (next(model.parameters()).device.type != "cpu" or getattr(config, "_attn_implementation", None) != "sdpa"
            or not kv_heads or kv_heads == heads):
        return False
    AttentionInterface.register(NAME, grouped_sdpa_forward)
    AttentionMaskInterface.register(NAME, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])  # the masks sdpa takes
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, AttributeError):  # a model with its own attention code takes no registered function
        return False
    return True
