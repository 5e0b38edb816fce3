"""The peers' draft rules, run beside fastapply's own for comparison (``draft.POLICIES``).

``none`` is plain decoding (nothing drafted, one token a pass); ``pld`` is transformers' prompt lookup
(the leftmost match of the output's last 2, else 1, tokens in prompt + output, and the 10 tokens after
it); ``ngram`` is vLLM's n-gram proposer (the longest match of up to 4 tokens, ties to the earliest, as
many tokens as the loop asks for). This module does not run the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapply.draft import DraftContext


class NoDrafter:
    """Plain decoding: nothing is drafted, each pass gives one token."""

    source = ""

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        return []

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        pass


class _ContextIndex:
    """Positions of every n-gram (n = 1..max_n) in prompt + output, kept up to date as the output grows."""

    def __init__(self, prompt_ids: Sequence[int], max_n: int):
        self.tokens: list[int] = []
        self.max_n = max_n
        self.positions: dict[tuple[int, ...], list[int]] = defaultdict(list)
        self.extend(prompt_ids)
        self._prompt_len = len(self.tokens)

    def extend(self, ids: Sequence[int]) -> None:
        for token in ids:
            self.tokens.append(token)
            end = len(self.tokens)
            for n in range(1, self.max_n + 1):
                if end - n >= 0:
                    self.positions[tuple(self.tokens[end - n:end])].append(end - n)

    def sync(self, out: Sequence[int]) -> None:
        self.extend(out[len(self.tokens) - self._prompt_len:])

    def earliest_continuation(self, n: int, k: int) -> list[int]:
        """The ``k`` tokens after the earliest occurrence of the last ``n`` tokens that has any after it."""
        starts = self.positions.get(tuple(self.tokens[-n:])) if len(self.tokens) >= n else None
        if not starts or starts[0] + n >= len(self.tokens):
            return []  # no occurrence, or the only one is the suffix itself
        return self.tokens[starts[0] + n:starts[0] + n + k]


class PromptLookupDrafter:
    """transformers' prompt lookup: the leftmost match of the last 2 (else 1) tokens in prompt + output,
    and the ``num_tokens`` after it."""

    source = "pld"

    def __init__(self, context: DraftContext, max_ngram: int = 2, num_tokens: int = 10):
        self.index = _ContextIndex(context.prompt_ids, max_ngram)
        self.max_ngram = max_ngram
        self.num_tokens = num_tokens

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        self.index.sync(out)
        for n in range(self.max_ngram, 0, -1):
            draft = self.index.earliest_continuation(n, self.num_tokens)
            if draft:
                return draft
        return []

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        pass


class NgramDrafter:
    """vLLM's n-gram proposer: the longest match (``max_n`` down to ``min_n`` tokens) of the output's
    suffix in prompt + output, ties to the earliest; it proposes as many tokens as the loop asks for."""

    source = "ngram"

    def __init__(self, context: DraftContext, min_n: int = 1, max_n: int = 4):
        self.index = _ContextIndex(context.prompt_ids, max_n)
        self.min_n, self.max_n = min_n, max_n

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        self.index.sync(out)
        for n in range(self.max_n, self.min_n - 1, -1):
            draft = self.index.earliest_continuation(n, k)
            if draft:
                return draft
        return []

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        pass
