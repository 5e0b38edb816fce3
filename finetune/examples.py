"""Training examples: JSONL edit records turned into token ids with labels on the answer only, padded
batches, and the bits-per-byte measure of held-out loss.

A record has the eval-task fields ``original``, ``update``, ``instruction`` and ``expected`` (others,
such as ``source``, are ignored). The prompt is ``fastapply.prompt.prompt_ids`` and the answer
``answer_ids(expected)`` -- the same token ids the model sees and writes at apply time -- so the loss
is exactly the loss of the answer given the prompt. Each answer token also has a training weight:
``edit_weight`` on the tokens where the answer departs from a copy of the original (written, or the
first token after a deletion), 1 elsewhere, so the few tokens that apply the edit are not drowned by
the many that copy. This module does not run a model.
"""

from __future__ import annotations

import difflib
import gzip
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from fastapply.errors import UsageError
from fastapply.prompt import Preset, answer_ids, prompt_ids

IGNORE = -100  # label of positions that carry no loss (the prompt, padding); torch's ignore_index
REQUIRED_FIELDS = ("original", "update", "expected")


@dataclass(frozen=True)
class Example:
    input_ids: tuple[int, ...]  # prompt + answer (+ EOS)
    labels: tuple[int, ...]  # IGNORE on the prompt, the token itself on the answer
    answer_bytes: int  # UTF-8 bytes of the answer text (tags and file), the unit of bits per byte
    weights: tuple[float, ...] = ()  # per answer token: edit_weight where the answer is not a copy, else 1

    @property
    def answer_tokens(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE)


@dataclass(frozen=True)
class ExampleSet:
    examples: tuple[Example, ...]
    skipped_too_long: int  # records whose prompt + answer exceed max_length

    @property
    def tokens(self) -> int:
        return sum(len(e.input_ids) for e in self.examples)


def read_records(path: str | Path) -> list[dict]:
    """The records of a JSONL file (``.gz`` too); a record without the required fields is a usage error."""
    records = []
    try:
        handle = (gzip.open if str(path).endswith(".gz") else open)(path, "rt", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            missing = [name for name in REQUIRED_FIELDS if not isinstance(record.get(name), str)]
            if missing:
                raise UsageError(f"{path}:{number}: record lacks {', '.join(missing)}")
            records.append(record)
    return records


def build_example(tokenizer, preset: Preset, record: dict, edit_weight: float = 1.0) -> Example:
    prompt = prompt_ids(tokenizer, preset, record["original"], record["update"], record.get("instruction") or "")
    answer = answer_ids(tokenizer, preset, record["expected"])
    weights = edit_weights(answer_ids(tokenizer, preset, record["original"]), answer, edit_weight) \
        if edit_weight != 1.0 else ()
    return Example(
        input_ids=(*prompt, *answer),
        labels=(*[IGNORE] * len(prompt), *answer),
        answer_bytes=len(preset.answer(record["expected"]).encode("utf-8")),
        weights=weights,
    )


def edit_weights(copy: Sequence[int], answer: Sequence[int], weight: float) -> tuple[float, ...]:
    """``weight`` for each token of ``answer`` that is not a copy of ``copy`` (the original's answer),
    and for the first token after a deletion; 1 for the rest.

    >>> edit_weights([1, 2, 3, 4], [1, 9, 3, 4], 5.0)
    (1.0, 5.0, 1.0, 1.0)
    >>> edit_weights([1, 2, 3, 4], [1, 3, 4], 5.0)
    (1.0, 5.0, 1.0)
    """
    weights = [1.0] * len(answer)
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, list(copy), list(answer), autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            weights[j1:j2] = [weight] * (j2 - j1)
        elif tag == "delete" and j1 < len(answer):
            weights[j1] = weight  # where the answer jumps over deleted code
    return tuple(weights)


def build_examples(tokenizer, preset: Preset, records: Sequence[dict], max_length: int,
                   edit_weight: float = 1.0, workers: int = 1) -> ExampleSet:
    """Examples for ``records``; those longer than ``max_length`` tokens are left out and counted.
    ``workers`` > 1 builds them in that many forked processes (tens of thousands of whole files take
    minutes on one core), in the same order."""
    kept, skipped = [], 0
    build = partial(build_example, tokenizer, preset, edit_weight=edit_weight)
    if workers > 1 and len(records) > 1:
        import multiprocessing
        import os

        global _forked_build
        parallelism = os.environ.get("TOKENIZERS_PARALLELISM")
        os.environ["TOKENIZERS_PARALLELISM"] = "false"  # each process tokenizes on its own core
        _forked_build = build  # inherited by the forked workers, not pickled with every chunk
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                examples = pool.map(_build_forked, records, chunksize=max(1, len(records) // (workers * 8)))
        finally:
            _forked_build = None
            if parallelism is None:  # the caller's own tokenizing keeps its threads
                del os.environ["TOKENIZERS_PARALLELISM"]
            else:
                os.environ["TOKENIZERS_PARALLELISM"] = parallelism
    else:
        examples = map(build, records)
    for example in examples:
        if len(example.input_ids) > max_length:
            skipped += 1
        else:
            kept.append(example)
    return ExampleSet(tuple(kept), skipped)


_forked_build = None  # build_examples' builder, for its forked workers


def _build_forked(record: dict) -> Example:
    return _forked_build(record)


def collate(examples: Sequence[Example], pad_id: int):
    """Right-padded tensors ``(input_ids, attention_mask, labels)``, each [B, L]."""
    import torch

    width = max(len(e.input_ids) for e in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, e in enumerate(examples):
        n = len(e.input_ids)
        input_ids[row, :n] = torch.tensor(e.input_ids)
        labels[row, :n] = torch.tensor(e.labels)
        mask[row, :n] = 1
    return input_ids, mask, labels


def label_weights(examples: Sequence[Example], width: int):
    """[B, width] training weights aligned with ``collate``'s labels (1 where an example has none)."""
    import torch

    weights = torch.ones((len(examples), width))
    for row, e in enumerate(examples):
        if e.weights:
            start = len(e.input_ids) - len(e.weights)
            weights[row, start:len(e.input_ids)] = torch.tensor(e.weights)
    return weights


def micro_batches(n_examples: int, batch_size: int, seed: int, start: int = 0) -> Iterator[list[int]]:
    """Endless example-index batches: each epoch a fresh permutation seeded by ``seed + epoch``.

    The stream depends only on its arguments, so a resumed run skips ``start`` batches and sees exactly
    what an uninterrupted run would have. The last batch of an epoch may be short.
    E.g. n_examples=3, batch_size=2 -> [[a, b], [c], [d, e], [f], ...] with {a, b, c} = {d, e, f} = {0, 1, 2}.
    """
    import torch

    def epoch(number: int) -> list[list[int]]:
        order = torch.randperm(n_examples, generator=torch.Generator().manual_seed(seed + number)).tolist()
        return [order[i:i + batch_size] for i in range(0, n_examples, batch_size)]

    return _epochs(epoch, start)


def token_batches(lengths: Sequence[int], max_tokens: int, seed: int, start: int = 0) -> Iterator[list[int]]:
    """Endless example-index batches of similar lengths whose padded size (longest x count) is at most
    ``max_tokens`` (an example longer than that goes alone): on a GPU a forward pass of batch 1 costs
    about as much host time launching kernels as a short example's arithmetic, so examples are batched
    by tokens, not by count, with little padding. Epoch after epoch of ``epoch_token_batches``; the
    stream depends only on its arguments, so a resumed run skips ``start`` batches and sees exactly what
    an uninterrupted run would have.
    """
    return _epochs(lambda number: epoch_token_batches(lengths, max_tokens, seed + number), start)


def batch_stream(lengths: Sequence[int], batch_size: int, batch_tokens: int, seed: int,
                 start: int = 0) -> Iterator[list[int]]:
    """The batches a run draws from examples of ``lengths`` tokens: ``token_batches`` when
    ``batch_tokens`` is set, else ``micro_batches`` of ``batch_size``; the first ``start`` skipped."""
    if batch_tokens:
        return token_batches(lengths, batch_tokens, seed, start)
    return micro_batches(len(lengths), batch_size, seed, start)


def _epochs(epoch: Callable[[int], list[list[int]]], start: int) -> Iterator[list[int]]:
    """The batches of ``epoch(0)``, ``epoch(1)``, ... endlessly (an empty epoch ends them), the first
    ``start`` skipped."""
    number = 0
    while True:
        batches = epoch(number)
        if not batches:
            return
        if start >= len(batches):
            start -= len(batches)
        else:
            yield from batches[start:]
            start = 0
        number += 1


def epoch_token_batches(lengths: Sequence[int], max_tokens: int, seed: int, pool: int = 256) -> list[list[int]]:
    """One epoch of ``token_batches``: a permutation seeded by ``seed`` cut into pools of ``pool``
    examples, each pool sorted by length and packed greedily, the batches then shuffled.
    E.g. lengths=[5, 1, 5, 1], max_tokens=4 -> the two 1s together and each 5 alone, in a shuffled order.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(lengths), generator=generator).tolist()
    batches = []
    for begin in range(0, len(order), pool):
        batch: list[int] = []
        for index in sorted(order[begin:begin + pool], key=lambda i: lengths[i]):
            if batch and lengths[index] * (len(batch) + 1) > max_tokens:
                batches.append(batch)
                batch = []
            batch.append(index)
        batches.append(batch)
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def answer_nats(logits, labels):
    """The negative log-likelihood, in nats, of each labelled token [B, S] (0 where labelled ``IGNORE``).

    ``logits`` [B, S, V] are the model's predictions for ``labels`` [B, S] position by position (already
    shifted: ``logits[:, t]`` predicts ``labels[:, t]``), taken in float32.
    """
    import torch.nn.functional as F

    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE,
                           reduction="none").view(labels.shape)


def answer_nll_bits(logits, labels):
    """Summed negative log-likelihood, in bits, of the labelled tokens (``answer_nats`` summed).
    E.g. uniform logits over V=4 for 3 labelled tokens -> 3 * log2(4) = 6 bits.
    """
    return answer_nats(logits, labels).sum() / math.log(2)


@dataclass(frozen=True)
class Miss:
    """An answer token that is not the model's top choice: where greedy decoding would leave the answer."""
    at: int  # its index among the example's answer tokens
    wanted: int  # the answer's token
    chosen: int  # the model's top choice there
    regret: float  # nats by which the chosen token's log-probability beats the wanted one's


def missed_tokens(logits, labels) -> list[tuple[Miss, ...]]:
    """Per example [B], the labelled positions where the model's top token is not the label, indexed from
    the example's first labelled position: none means greedy decoding, fed the prompt, writes the whole
    answer exactly. Shapes as ``answer_nll_bits``.
    E.g. logits whose argmax is [[5, 6, 9]] against labels [[IGNORE, 6, 7]] -> [(Miss(at=1, wanted=7, chosen=9, ...),)].
    """
    chosen = logits.argmax(dim=-1)  # [B, S]
    labelled = labels != IGNORE
    firsts = labelled.float().argmax(dim=1).tolist()  # each example's first answer token within the span
    # log p(top) - log p(label) is the difference of their logits: no softmax needed
    gaps = (logits.gather(-1, chosen[..., None]).float()
            - logits.gather(-1, labels.clamp(min=0)[..., None]).float())[..., 0]  # [B, S]
    rows, cols = ((chosen != labels) & labelled).nonzero(as_tuple=True)
    wanted, top, regrets = labels[rows, cols], chosen[rows, cols], gaps[rows, cols]
    per_example = [[] for _ in range(labels.shape[0])]
    for row, col, w, c, r in zip(rows.tolist(), cols.tolist(), wanted.tolist(), top.tolist(), regrets.tolist()):
        per_example[row].append(Miss(at=col - firsts[row], wanted=w, chosen=c, regret=r))
    return [tuple(found) for found in per_example]


def bits_per_byte(total_bits: float, total_bytes: int) -> float:
    """Bits of answer NLL per UTF-8 byte of answer text: comparable across tokenizers.
    E.g. 6 bits over an answer of 12 bytes -> 0.5."""
    return total_bits / total_bytes if total_bytes else float("nan")
