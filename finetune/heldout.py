"""The held-out verdict on an apply model: one teacher-forced pass per example gives its answer's loss
in bits per byte, and whether greedy decoding would write it exactly (every answer token the model's
top choice), in the dtype the pass runs in.

``finetune.train`` reports it at each evaluation and ``finetune.score`` puts checkpoints side by side
with it. This module trains nothing and builds no examples (``examples.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from finetune.examples import IGNORE, Example, Miss, answer_nll_bits, bits_per_byte, collate, missed_tokens


def answer_logits(model, input_ids, mask, labels):
    """(logits, targets) for the labelled positions of a right-padded batch, both over the same span.

    Only the logits from the position before the first answer token onwards are computed
    (``logits_to_keep``), which spares the [B, prompt, vocab] tensor the prompt would cost.
    """
    seq = input_ids.shape[1]
    first = int((labels != IGNORE).float().argmax(dim=1).min())  # earliest answer token in the batch
    logits = model(input_ids=input_ids, attention_mask=mask, logits_to_keep=seq - first + 1).logits  # [B, S-first+1, V]
    return logits[:, :-1], labels[:, first:]  # logits[:, j] predicts the token at position first + j


@dataclass(frozen=True)
class HeldOut:
    """The held-out set's verdict on a model."""
    bits_per_byte: float  # answer NLL in bits over the UTF-8 bytes of the answers
    greedy_exact: int  # examples whose every answer token is the model's top choice: greedy writes them exactly
    examples: int
    misses_per_1000: float  # answer tokens that are not the model's top choice, per 1,000 answer tokens
    where: tuple[tuple[Miss, ...], ...] = ()  # per example, in order: its answer tokens that are not the top choice

    @property
    def misses(self) -> tuple[int, ...]:
        """Per example, in order: how many of its answer tokens are not the top choice."""
        return tuple(len(found) for found in self.where)


def evaluate(model, examples: list[Example] | tuple[Example, ...], pad_id: int, batch_size: int = 1,
             device: str = "cpu", autocast=None) -> HeldOut:
    """Score the held-out ``examples`` in one teacher-forced pass each: bits per byte, and how many of
    them greedy decoding would write exactly (in the dtype the pass runs in)."""
    import contextlib

    import torch

    was_training = model.training
    model.eval()
    bits, where, answer_tokens = 0.0, [], 0
    with torch.no_grad(), autocast or contextlib.nullcontext():
        for start in range(0, len(examples), batch_size):
            input_ids, mask, labels = (t.to(device) for t in collate(examples[start:start + batch_size], pad_id))
            logits, targets = answer_logits(model, input_ids, mask, labels)
            bits += float(answer_nll_bits(logits, targets))
            where += missed_tokens(logits, targets)
            answer_tokens += int((targets != IGNORE).sum())
    model.train(was_training)
    misses = [len(found) for found in where]
    return HeldOut(bits_per_byte=bits_per_byte(bits, sum(e.answer_bytes for e in examples)),
                   greedy_exact=misses.count(0), examples=len(examples),
                   misses_per_1000=1000 * sum(misses) / answer_tokens if answer_tokens else 0.0, where=tuple(where))
