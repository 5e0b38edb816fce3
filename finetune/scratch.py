"""Tokenizers and Llama models built from scratch, saved as ordinary checkpoints.

The tests and the benchmarks start here: a byte-level BPE tokenizer trained with
``tokenizers`` on source files, and a randomly initialised ``LlamaForCausalLM`` of a chosen shape,
both saved with ``save_pretrained`` so that fastapply loads them through the same path as a user's
checkpoint. Nothing here trains the model; see ``echo.py`` for that. ``--tokenizer`` gives the random
model an existing tokenizer instead (fastapply-small's, say: a bigger shape that reads the same prompts
and answers token for token, for replayed benchmarks).

    python -m finetune.scratch --out runs/llama-100m --shape 100m
    python -m finetune.scratch --out runs/llama-1b --shape 1b --tokenizer fastapply/models/fastapply-small --dtype bfloat16
"""

from __future__ import annotations

import argparse
import sysconfig
from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ["<s>", "</s>", "<pad>"]

# Llama shapes by name: (hidden, layers, heads, kv heads, intermediate). "tiny" is for tests.
SHAPES = {
    "tiny": (64, 2, 4, 2, 128),
    "small": (256, 4, 4, 4, 704),
    "100m": (768, 12, 12, 12, 2048),
    "1b": (2048, 16, 32, 8, 8192),
}


def stdlib_corpus(limit: int = 200) -> list[str]:
    """Texts of up to ``limit`` Python standard library modules: source code every machine has."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))[:limit]
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024):
    """A byte-level BPE tokenizer (``PreTrainedTokenizerFast``) with ``<s>``, ``</s>`` and ``<pad>``.

    Byte-level means every byte has a token, so any file encodes (the fallback for rare characters)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", clean_up_tokenization_spaces=False
    )


def new_llama(vocab_size: int, shape: str = "tiny", max_positions: int = 8192, seed: int = 0,
              special_ids: tuple[int, int, int] = (0, 1, 2)):
    """A randomly initialised float32 ``LlamaForCausalLM`` of the named shape (see ``SHAPES``);
    ``special_ids`` are its BOS, EOS and padding ids (those of ``train_tokenizer``'s by default)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, heads, kv_heads, intermediate = SHAPES[shape]
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=intermediate,
        max_position_embeddings=max_positions,
        bos_token_id=special_ids[0],
        eos_token_id=special_ids[1],
        pad_token_id=special_ids[2],
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval()


def save_checkpoint(model, tokenizer, out: str | Path) -> Path:
    """Save model and tokenizer side by side, as a user's checkpoint directory."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="checkpoint directory to write")
    parser.add_argument("--shape", default="tiny", choices=sorted(SHAPES))
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--tokenizer", help="an existing tokenizer's directory to use instead of training one "
                        "(--vocab-size is then its own)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="weights as saved")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    if args.tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    else:
        tokenizer = train_tokenizer(stdlib_corpus(), args.vocab_size)
    eos = tokenizer.eos_token_id
    special = (eos if tokenizer.bos_token_id is None else tokenizer.bos_token_id, eos,
               eos if tokenizer.pad_token_id is None else tokenizer.pad_token_id)
    model = new_llama(len(tokenizer), args.shape, seed=args.seed, special_ids=special)
    model.to(getattr(torch, args.dtype))
    path = save_checkpoint(model, tokenizer, args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {path}: {params / 1e6:.1f}M parameters, vocabulary {len(tokenizer)}")


if __name__ == "__main__":
    main()
