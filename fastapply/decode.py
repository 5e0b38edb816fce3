"""The speculative loop: propose -> verify -> accept -> roll back, until a stop token or the budget.

Each pass the drafter proposes up to ``k`` tokens, the target checks them all in one forward pass
and returns its own choice at every position; the longest prefix of the draft equal to those choices
is kept, plus the target's choice right after it, and the target's cache is rolled back past the
rest. So the output is token for token what the target alone would produce (greedy), or a sample from
the target's own distribution (with a deterministic draft, keeping the draft while it equals the
target's samples is exactly the speculative-sampling acceptance rule).

The draft length ``k`` is chosen by cost: from ``target.cost(k)`` and the recent acceptance rate of
the source that is proposing, the ``k`` that maximises expected tokens per second.
This module does not print; ``DecodeStats`` is data for the caller.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from fastapply.draft import Drafter
from fastapply.target import Target

MAX_DRAFT = 512  # longest draft one pass may verify
DRAFT_SIZES = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass(frozen=True)
class DecodeStats:
    passes: int  # verify forward passes (the prefill is not counted)
    tokens: int  # tokens out, the first one (from the prefill) included
    accepted: tuple[int, ...]  # draft tokens accepted in each pass
    proposed: tuple[int, ...]  # draft tokens proposed in each pass
    prefill_s: float
    decode_s: float
    chars: int = 0  # characters of the output text; set by the caller that detokenizes
    sources: dict[str, int] = field(default_factory=dict)  # accepted tokens by draft source

    @property
    def seconds(self) -> float:
        return self.prefill_s + self.decode_s

    @property
    def tokens_per_pass(self) -> float:
        return (self.tokens - 1) / self.passes if self.passes else 0.0

    @property
    def acceptance(self) -> float:
        """Share of proposed draft tokens that were accepted."""
        proposed = sum(self.proposed)
        return sum(self.accepted) / proposed if proposed else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    @property
    def chars_per_s(self) -> float:
        """Characters of output over wall time including the prefill: the figure fast-apply tools quote."""
        return self.chars / self.seconds if self.seconds else 0.0

    def histogram(self) -> dict[int, int]:
        """How many passes accepted each number of draft tokens."""
        return dict(sorted(Counter(self.accepted).items()))

    def as_dict(self) -> dict:
        return {
            "passes": self.passes,
            "tokens": self.tokens,
            "tokens_per_pass": round(self.tokens_per_pass, 3),
            "acceptance": round(self.acceptance, 4),
            "prefill_s": round(self.prefill_s, 4),
            "decode_s": round(self.decode_s, 4),
            "seconds": round(self.seconds, 4),
            "tokens_per_s": round(self.tokens_per_s, 2),
            "chars": self.chars,
            "chars_per_s": round(self.chars_per_s, 1),
            "accepted_histogram": self.histogram(),
            "accepted_by_source": dict(self.sources),
        }


class AcceptanceTracker:
    """Recent per-token acceptance rate of each draft source, as exponentially decayed counts.

    With a per-token acceptance rate ``a``, a draft of ``k`` tokens yields on average
    ``1 + a + a^2 + ... + a^k`` tokens (the target's own token included).
    """

    def __init__(self, decay: float = 0.8, prior_accepted: float = 4.0, prior_rejected: float = 1.0):
        self.decay = decay
        self.prior = (prior_accepted, prior_rejected)
        self.counts: dict[str, tuple[float, float]] = {}

    def rate(self, source: str) -> float:
        accepted, rejected = self.counts.get(source, self.prior)
        return accepted / (accepted + rejected)

    def observe(self, source: str, proposed: int, accepted: int) -> None:
        if proposed == 0:
            return
        acc, rej = self.counts.get(source, self.prior)
        self.counts[source] = (acc * self.decay + accepted, rej * self.decay + (accepted < proposed))


def choose_draft_length(cost: Callable[[int], float], rate: float, limit: int) -> int:
    """The draft length in ``DRAFT_SIZES`` (at most ``limit``) with the most expected tokens per second.

    >>> choose_draft_length(lambda k: 1.0, 0.9, 64)   # passes cost the same whatever k: draft all
    64
    >>> choose_draft_length(lambda k: 1.0 + k, 0.5, 64)  # every token costs a pass: don't draft
    0
    """
    best_k, best_value = 0, 0.0
    for k in [size for size in DRAFT_SIZES if size < limit] + [max(limit, 0)]:
        expected = (1 - rate ** (k + 1)) / (1 - rate) if rate < 1 else k + 1
        value = expected / cost(k)
        if value > best_value:
            best_k, best_value = k, value
    return best_k


def speculative_generate(
    target: Target,
    drafter: Drafter,
    prompt_ids: list[int],
    max_new_tokens: int,
    stop_ids: Collection[int] = (),
    stop_sequences: Sequence[Sequence[int]] = (),
    on_pass: Callable[[list[int], DecodeStats], None] | None = None,
) -> tuple[list[int], DecodeStats]:
    """Generate up to ``max_new_tokens`` tokens after ``prompt_ids``; stop after a stop id or a stop
    sequence (which stays in the output). Returns the tokens and the stats."""
    tracker = AcceptanceTracker()
    accepted_per_pass: list[int] = []
    proposed_per_pass: list[int] = []
    by_source: Counter[str] = Counter()
    start = time.perf_counter()
    out = [target.prefill(prompt_ids)]  # prefill: the first token
    prefill_s = time.perf_counter() - start
    drafter.update(out, 0)
    done = stop_index(out, 0, stop_ids, stop_sequences)

    def stats() -> DecodeStats:
        return DecodeStats(
            passes=len(accepted_per_pass), tokens=len(out), accepted=tuple(accepted_per_pass),
            proposed=tuple(proposed_per_pass), prefill_s=prefill_s,
            decode_s=time.perf_counter() - start - prefill_s, sources=dict(by_source),
        )

    while done is None and len(out) < max_new_tokens:
        # propose: as many tokens as pay for themselves, never past the budget
        limit = min(MAX_DRAFT, max_new_tokens - len(out) - 1)
        draft = drafter.propose(out, limit)
        k = choose_draft_length(target.cost, tracker.rate(drafter.source), min(limit, len(draft)))
        if draft and k == 0 and limit > 0:
            k = 1  # one drafted token costs next to nothing, and keeps the acceptance estimate learning
        draft = draft[:k]
        # verify: the target's own choice after out, and after each draft prefix
        choices = target.verify(draft)
        # accept: the longest prefix of the draft the target agrees with, plus the target's next token
        n = 0
        while n < len(draft) and draft[n] == choices[n]:
            n += 1
        # roll back: the target forgets the rejected draft tokens
        target.accept(n)
        tracker.observe(drafter.source, len(draft), n)
        accepted_per_pass.append(n)
        proposed_per_pass.append(len(draft))
        if n:
            by_source[drafter.source] += n
        before = len(out)
        out.extend(draft[:n])
        out.append(choices[n])
        done = stop_index(out, before, stop_ids, stop_sequences)
        drafter.update(out, n)
        if on_pass is not None:
            on_pass(out, stats())
    if done is not None:
        del out[done:]
    return out, stats()


def stop_index(out: list[int], since: int, stop_ids: Collection[int],
             stop_sequences: Sequence[Sequence[int]]) -> int | None:
    """Length to cut ``out`` to if a stop id or stop sequence ends at or after index ``since``."""
    for i in range(since, len(out)):
        if out[i] in stop_ids:
            return i + 1
        for seq in stop_sequences:
            if seq and i + 1 >= len(seq) and out[i + 1 - len(seq):i + 1] == list(seq):
                return i + 1
    return None
