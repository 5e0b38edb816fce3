"""A draft vocabulary: the token ids a model-run drafter scores, and its output layer cut to their rows.

A drafter that runs a model of its own (a draft model, Medusa heads) ends in an output layer with a row
per token: 49,152 rows on SmolLM2, whose product for one position costs about as much as all 30 layers
of the 135M model below it. The tokens an answer writes are few: those its training answers use most
(``draft_vocab.json``, which the trainers write beside what they train) and the request's prompt. Scoring
only those spares most of that product; a token outside the set is never proposed, which costs
acceptance, never correctness (every draft is verified). This module does not draft (``draftmodel.py``,
``medusa.py``); ``ScoredRows`` imports torch.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path

DRAFT_VOCAB_FILE = "draft_vocab.json"  # {"token_ids": [...]}, most frequent first
VOCAB_SIZE = 1024  # ids the trainers keep: with the prompt's, they cover nearly every answer token


def frequent_tokens(answers: Iterable[Iterable[int]], n: int) -> list[int]:
    """The ``n`` token ids most frequent in ``answers``, most frequent first (ties: the smaller id).

    >>> frequent_tokens([[5, 6, 5], [7, 5, 6]], 2)
    [5, 6]
    """
    counts = Counter(token for answer in answers for token in answer)
    return sorted(counts, key=lambda token: (-counts[token], token))[:n]


def write_draft_vocab(directory: str | Path, token_ids: list[int]) -> Path:
    """Write ``token_ids`` (most frequent first) as ``directory``'s ``draft_vocab.json``."""
    path = Path(directory) / DRAFT_VOCAB_FILE
    path.write_text(json.dumps({"token_ids": token_ids}) + "\n")
    return path


def read_draft_vocab(directory: str | Path) -> list[int] | None:
    """The token ids in ``directory``'s ``draft_vocab.json``; None when it has none."""
    path = Path(directory) / DRAFT_VOCAB_FILE
    if not path.is_file():
        return None
    return [int(i) for i in json.loads(path.read_text())["token_ids"]]


def with_prompt(vocab: Collection[int] | None, prompt_ids: Iterable[int]) -> set[int] | None:
    """What a request's drafter scores: ``vocab`` and the prompt's ids; None (every id) without a ``vocab``.

    >>> sorted(with_prompt([5, 9], [9, 2]))
    [2, 5, 9]
    >>> with_prompt(None, [9, 2]) is None
    True
    """
    return None if vocab is None else {*vocab, *prompt_ids}


class ScoredRows:
    """The rows of the output layer ``head`` (a ``Linear`` [V, H]) for the token ids ``ids``, gathered once.

    ``logits(hidden [..., H])`` gives [..., N], column j scoring token ``ids[j]`` (ascending);
    ``tokens(columns)`` maps columns back to token ids.
    """

    def __init__(self, head, ids: Collection[int]):
        import torch

        weight = head.weight.detach()
        self.ids = torch.tensor(sorted(set(ids)), dtype=torch.long, device=weight.device)  # [N]
        self.weight = weight[self.ids]  # [N, H]
        self.bias = head.bias.detach()[self.ids] if head.bias is not None else None

    def logits(self, hidden):
        import torch.nn.functional as F

        return F.linear(hidden.to(self.weight.dtype), self.weight, self.bias)

    def tokens(self, columns):
        return self.ids[columns]
