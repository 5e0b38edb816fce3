"""The speculative loop: propose -> verify -> accept -> roll back, until a stop token or the budget.

Each pass the drafter proposes up to ``k`` tokens, the target checks them all in one forward pass
and returns its own choice at every position; the longest prefix of the draft equal to those choices
is kept, plus the target's choice right after it, and the target's cache is rolled back past the
rest. So the output is token for token what the target alone would produce (greedy), or a sample from
the target's own distribution (with a deterministic draft, keeping the draft while it equals the
target's samples is exactly the speculative-sampling acceptance rule).

The draft length ``k`` is chosen by cost: from ``target.cost(k)`` and the recent acceptance rates of
the source that is proposing (apart for the tokens it calls calm), the first pass of the plan that gets
through its draft in the least expected time.
This module does not print; ``DecodeStats`` is data for the caller.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from fastapply.draft import Drafter
from fastapply.target import Target
from fastapply.tree import DraftTree

MAX_DRAFT = 512  # longest draft one pass may verify
# Longest draft verified in the prompt's own pass, unplanned: a departure in "calm" code (a merge the
# model does not follow) wastes at most this many positions of a prefill (nestjs http.exception.d.ts:
# 512 drafted, 73 kept, 1.3 s lost on a 2-core CPU).
OPENING_DRAFT = 128
BRANCH_TOKENS = 8  # longest alternative branch verified beside the draft
TREE_NODES = 32  # most alternative tokens one pass verifies beside the draft
PROBE_EVERY = 8  # after the plan declines a draft, every this many passes one of its tokens is tried
BRANCH = "branch"  # the acceptance tracker's name for "a pass took an alternative branch"
DRAFT_SIZES = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass(frozen=True)
class DecodeStats:
    passes: int  # verify forward passes (the prefill is not counted unless it verified a draft too)
    tokens: int  # tokens out, the first one (from the prefill) included
    accepted: tuple[int, ...]  # draft tokens accepted in each pass
    proposed: tuple[int, ...]  # draft tokens proposed in each pass
    prefill_s: float  # the prompt's pass, with the draft it verified where it did
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
    ``1 + a + a^2 + ... + a^k`` tokens (the target's own token included). Where a drafter tells which
    of its tokens are calm (``Drafter.calm``: outside the lines where an edit is likely, ``risk.py``),
    those are counted apart, under ``calm_key(source)``: the answer seldom leaves a source there, and
    one departure at an edit must not shorten the drafts through the unchanged code after it.
    """

    def __init__(self, decay: float = 0.8, prior_accepted: float = 4.0, prior_rejected: float = 1.0,
                 calm_prior: tuple[float, float] = (2000.0, 1.0)):
        self.decay = decay
        self.prior = (prior_accepted, prior_rejected)
        self.calm_prior = calm_prior
        self.counts: dict[str, tuple[float, float]] = {}

    def rate(self, key: str) -> float:
        accepted, rejected = self.counts.get(key, self._prior(key))
        return accepted / (accepted + rejected)

    def observe(self, source: str, proposed: int, accepted: int, calm: Sequence[bool] | None = None) -> None:
        """A pass proposed ``proposed`` tokens from ``source`` (``calm``: which of them were calm) and the
        target accepted the first ``accepted``."""
        if not calm:
            self._count(source, proposed, accepted)
            return
        reached = calm[:min(accepted + 1, proposed)]  # the accepted tokens and the rejected one
        calm_reached = sum(reached)
        calm_left = accepted < proposed and reached[-1]  # the rejected token was a calm one
        self._count(calm_key(source), calm_reached, calm_reached - calm_left)
        self._count(source, len(reached) - calm_reached, len(reached) - calm_reached - (accepted < proposed and not calm_left))

    def _count(self, key: str, proposed: int, accepted: int) -> None:
        if proposed == 0:
            return
        acc, rej = self.counts.get(key, self._prior(key))
        self.counts[key] = (acc * self.decay + accepted, rej * self.decay + (accepted < proposed))

    def _prior(self, key: str) -> tuple[float, float]:
        return self.calm_prior if key.endswith(CALM_SUFFIX) else self.prior


CALM_SUFFIX = "/calm"


def calm_key(source: str) -> str:
    """The tracker's name for ``source``'s calm tokens."""
    return source + CALM_SUFFIX


def choose_draft_length(cost: Callable[[int], float], rate: float, limit: int,
                        calm: Sequence[bool] | None = None, calm_rate: float = 1.0,
                        throughput: float | None = None) -> int:
    """The length of this pass's draft in the plan for the next ``limit`` draft tokens that gains the
    most: tokens out minus ``throughput`` (tokens a second: what the time is worth, by default that of
    64-token passes all accepted) times the seconds spent. Each draft token is accepted at ``rate``, or
    at ``calm_rate`` where ``calm`` marks it calm (``risk.py``).

    A pass drafting positions ``i+1..j`` costs ``cost(j - i)``, gives the accepted tokens and the
    target's own, and when all are accepted the next pass starts at ``j + 1``; after a rejection the
    drafter starts afresh whatever the plan. So ``G(i) = max_j E[tokens] - throughput * cost(j - i)
    + P(i+1..j accepted) * G(j + 1)``, the plan's passes ending at a size in ``DRAFT_SIZES``, at ``limit``
    or where a calm stretch begins or ends. Unlike maximising one pass's tokens per second, this
    stops a draft before a likely edit when the unchanged code after it is long (the next pass drafts
    that anyway) and drafts through it when it is short.

    >>> choose_draft_length(lambda k: 1.0, 0.9, 64)   # passes cost the same whatever k: draft all
    64
    >>> choose_draft_length(lambda k: 1.0 + k, 0.5, 64)  # every token costs a pass: don't draft
    0
    >>> choose_draft_length(lambda k: 1.5 if k else 1.0, 0.3, 4)  # a CPU's dear first token: not for 1.4
    0
    >>> calm = [True] * 300 + [False] * 10 + [True] * 202   # unchanged code, a likely edit, unchanged code
    >>> choose_draft_length(lambda k: 1.0 + k / 30, 0.8, 512, calm, calm_rate=0.9996)   # not past the edit
    310
    """
    limit = max(limit, 0)
    if limit == 0:
        return 0
    if throughput is None:
        throughput = 65 / cost(64)
    survival = survival_curve(rate, limit, calm, calm_rate)
    reached = [0.0]  # reached[t]: expected accepted tokens among the first t
    for t in range(1, limit + 1):
        reached.append(reached[-1] + survival[t])
    ends = {size for size in DRAFT_SIZES if 0 < size < limit} | {limit}
    if calm:
        ends |= {t for t in range(1, min(limit, len(calm))) if calm[t - 1] != calm[t]}
    ends_sorted = sorted(ends)
    costs: dict[int, float] = {}
    gain_from: dict[int, float] = {}  # G(i); nothing more past the limit
    first = 0
    for i in sorted({0, 1} | {j + 1 for j in ends_sorted if j < limit}, reverse=True):
        best, best_j = -float("inf"), i
        for j in ([i] if i == 0 else []) + [j for j in ends_sorted if j > i]:  # j == i: a pass drafting nothing
            if j - i not in costs:
                costs[j - i] = cost(j - i)
            if survival[i] > 0:
                accepted, tokens = survival[j] / survival[i], 1 + (reached[j] - reached[i]) / survival[i]
            else:
                accepted, tokens = 0.0, 1.0
            gain = tokens - throughput * costs[j - i] + accepted * gain_from.get(j + 1, 0.0)
            if gain > best:
                best, best_j = gain, j
        gain_from[i] = best
        first = best_j
    if first and (1 + reached[first]) / costs[first] < 1 / cost(0):
        return 0  # this pass would yield fewer tokens a second than one that drafts nothing
    return first


def survival_curve(rate: float, k: int, calm: Sequence[bool] | None = None, calm_rate: float = 1.0) -> list[float]:
    """``survival[t]``, t = 0..k: the chance that draft tokens 1..t are all accepted, each at ``rate``, or
    at ``calm_rate`` where ``calm`` marks it calm.

    >>> survival_curve(0.5, 3), survival_curve(0.5, 2, [True, False], 1.0)
    ([1.0, 0.5, 0.25, 0.125], [1.0, 1.0, 0.5])
    """
    survival = [1.0]
    for t in range(1, k + 1):
        survival.append(survival[-1] * (calm_rate if calm and t <= len(calm) and calm[t - 1] else rate))
    return survival


def expected_tokens(rate: float, k: int) -> float:
    """Tokens a pass yields on average from a draft of ``k`` at per-token acceptance ``rate``, the
    target's own token included: ``1 + rate + ... + rate^k``."""
    return (1 - rate ** (k + 1)) / (1 - rate) if rate < 1 else k + 1


def tree_pays(cost: Callable[[int], float], k: int, extra: int, rate: float, branch_rate: float,
              branch_len: int) -> bool:
    """Whether verifying ``extra`` alternative tokens beside a draft of ``k`` gives more expected tokens
    per second: an alternative is only reached when the draft's first token is wrong (1 - ``rate``),
    and then is right with probability ``branch_rate``.

    >>> tree_pays(lambda n: 1.0, 8, 8, 0.5, 0.5, 8)          # free extra tokens: always
    True
    >>> tree_pays(lambda n: 1.0 + n / 8, 8, 8, 0.9, 0.3, 8)  # dear, and seldom reached: no
    False
    """
    single = expected_tokens(rate, k) / cost(k)
    gain = (1 - rate) * branch_rate * (expected_tokens(rate, branch_len) - 1)
    return (expected_tokens(rate, k) + gain) / cost(k + extra) > single


def speculative_generate(
    target: Target,
    drafter: Drafter,
    prompt_ids: list[int],
    max_new_tokens: int,
    stop_ids: Collection[int] = (),
    stop_sequences: Sequence[Sequence[int]] = (),
    on_pass: Callable[[list[int], DecodeStats], None] | None = None,
    trees: bool = True,
    give_up: Callable[[list[int]], bool] | None = None,
) -> tuple[list[int], DecodeStats]:
    """Generate up to ``max_new_tokens`` tokens after ``prompt_ids``; stop after a stop id or a stop
    sequence (which stays in the output), or after a pass where ``give_up(tokens so far)`` is true (an
    answer that is sure to be refused). Returns the tokens and the stats. With ``trees`` (where the
    target and the drafter both can) a drafter's alternatives are verified beside its draft as a tree."""
    tracker = AcceptanceTracker()
    accepted_per_pass: list[int] = []
    proposed_per_pass: list[int] = []
    by_source: Counter[str] = Counter()
    source = ""  # the drafter's source in the last pass

    def count(proposed: int, n: int) -> None:
        """A pass's draft tokens, proposed and accepted, the accepted ones under the drafter's source."""
        nonlocal source
        accepted_per_pass.append(n)
        proposed_per_pass.append(proposed)
        source = drafter.source
        by_source[source] += n

    start = time.perf_counter()
    # prefill: the first token, or with a target that can, the answer's first tokens too where the drafter
    # already guesses them (``opening_draft``): they are verified in the prompt's own pass, as the limit
    # (one pass over prompt and answer) would read them
    draft = opening_draft(drafter, min(MAX_DRAFT, max_new_tokens - 1)) if hasattr(target, "prefill_draft") else []
    if draft:
        choices = target.prefill_draft(prompt_ids, draft)
        if hasattr(choices, "expect"):
            choices.expect(len(draft) + 1)
        n = common_prefix(draft, choices)
        target.accept(n)
        out = [*draft[:n], choices[n]]
        tracker.observe(drafter.source, len(draft), n, drafter.calm)
        count(len(draft), n)
    else:
        out = [target.prefill(prompt_ids)]
    prefill_s = time.perf_counter() - start
    drafter.update(out, len(out) - 1)
    done = stop_index(out, 0, stop_ids, stop_sequences)

    def stats() -> DecodeStats:
        return DecodeStats(
            passes=len(accepted_per_pass), tokens=len(out), accepted=tuple(accepted_per_pass),
            proposed=tuple(proposed_per_pass), prefill_s=prefill_s,
            decode_s=time.perf_counter() - start - prefill_s, sources={k: v for k, v in by_source.items() if v},
        )

    trees = trees and getattr(target, "verifies_trees", False) and hasattr(drafter, "candidates")
    declined = 0  # passes since the plan last verified a draft it was offered
    while done is None and len(out) < max_new_tokens:
        # propose: as many tokens as pay for themselves, never past the budget
        limit = min(MAX_DRAFT, max_new_tokens - len(out) - 1)
        # a draft the plan declines still gets one token tried now and then, so that the acceptance
        # estimate learns when its source starts predicting again; a costly drafter is not even asked
        # in between
        probe = declined >= PROBE_EVERY - 1
        if declined and getattr(drafter, "costly", False) and not probe:
            chains = []
        else:
            chains = drafter.candidates(out, limit) if trees else [drafter.propose(out, limit)]
        draft = chains[0] if chains else []
        calm = getattr(drafter, "calm", None)
        k = choose_draft_length(target.cost, tracker.rate(drafter.source), min(limit, len(draft)), calm,
                                tracker.rate(calm_key(drafter.source)))
        if draft and k == 0 and probe and limit > 0:
            k = 1
        if k:
            declined = 0
        elif declined or draft:
            declined += 1
        # alternatives are verified beside a draft, not instead of one the plan declined
        tree = branch_tree(draft[:k], chains[1:], limit) if trees and (k or not draft) else None
        draft = draft[:k]
        if tree is not None and not tree_pays(target.cost, len(draft), tree.size - len(draft),
                                              tracker.rate(drafter.source), tracker.rate(BRANCH),
                                              min(BRANCH_TOKENS, limit)):
            tree = None
        if tree is None:
            # verify: the target's own choice after out, and after each draft prefix (read in order: a
            # target that computes them as they are read is told how many are likely to be)
            choices = target.verify(draft)
            if draft and hasattr(choices, "expect"):
                rate, calm_rate = tracker.rate(drafter.source), tracker.rate(calm_key(drafter.source))
                choices.expect(round(sum(survival_curve(rate, len(draft), calm, calm_rate))))
            # accept: the longest prefix of the draft the target agrees with, plus the target's next token
            n = common_prefix(draft, choices)
            # roll back: the target forgets the rejected draft tokens
            target.accept(n)
            accepted, proposed = draft[:n], len(draft)
            following = choices[n]
        else:
            # the same four steps over a tree: every branch verified in one pass, the longest agreeing kept
            choices = target.verify_tree(tree)
            path = tree.accepted(choices)
            target.accept_path(path)
            accepted, proposed = [tree.tokens[node] for node in path], tree.size
            following = choices[path[-1] if path else 0]
            off_draft = any(node > len(draft) for node in path)  # the draft's nodes come first, 1..len(draft)
            tracker.observe(BRANCH, 1, int(off_draft))
        n = len(accepted)
        tracker.observe(drafter.source, len(draft), min(n, len(draft)), calm)
        count(proposed, n)
        before = len(out)
        out.extend(accepted)
        out.append(following)
        done = stop_index(out, before, stop_ids, stop_sequences)
        drafter.update(out, n)
        if on_pass is not None:
            on_pass(out, stats())
        if done is None and give_up is not None and give_up(out):
            break
    if done is not None:
        # the last pass may have accepted draft tokens past the stop (the EOS after a closing tag): they
        # are not written, so they are not counted either; its own token comes last
        past = min(len(out) - done - 1, accepted_per_pass[-1]) if accepted_per_pass else 0
        if past > 0:
            accepted_per_pass[-1] -= past
            by_source[source] -= past
        del out[done:]
    return out, stats()


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share, read in order: a draft's tokens the target agrees
    with, given its choices. E.g. [1, 2, 3], [1, 2, 4, 5] -> 2."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def opening_draft(drafter: Drafter, limit: int) -> list[int]:
    """What ``drafter`` proposes before the answer's first token, at most ``OPENING_DRAFT`` tokens (the
    plan's costs need a prefilled target), cut after its first risky token unless it ends there anyway
    (a short answer drafted whole, its closing lines risky: verified whole, it may take no other pass);
    empty where the drafter tells no calm tokens.

    >>> class Pointer:
    ...     source, calm = "prediction", None
    ...     def __init__(self, length):
    ...         self.length = length
    ...     def propose(self, out, k):
    ...         self.calm = [True, True, False, True, True][:min(k, self.length)]
    ...         return [7, 8, 9, 10, 11][:min(k, self.length)]
    >>> opening_draft(Pointer(5), 4), opening_draft(Pointer(5), 2), opening_draft(Pointer(4), 512)
    ([7, 8, 9], [7, 8], [7, 8, 9, 10])
    """
    if limit <= 0 or not hasattr(drafter, "calm"):  # a drafter that tells no calm tokens is not asked
        return []
    asked = min(limit, OPENING_DRAFT)
    draft = drafter.propose([], asked)
    calm = getattr(drafter, "calm", None)
    if not draft or not calm:
        return []
    if len(draft) < asked:  # the source ends within it: the whole answer, as drafted
        return draft
    risky = next((i for i, quiet in enumerate(calm) if not quiet), len(draft) - 1)
    return draft[:risky + 1]


def branch_tree(draft: list[int], alternatives: Sequence[Sequence[int]], limit: int) -> DraftTree | None:
    """The tree of ``draft`` and its ``alternatives`` (each cut to ``BRANCH_TOKENS``, all together to
    ``TREE_NODES`` beyond the draft and to ``limit`` deep), or ``None`` when they add nothing to the draft.

    >>> branch_tree([1, 2], [[1, 3], [1, 2]], 8).tokens
    (-1, 1, 2, 3)
    >>> branch_tree([1, 2], [[1]], 8) is None
    True
    """
    if not alternatives:
        return None
    cut = min(BRANCH_TOKENS, limit)
    tree = DraftTree.from_chains([draft, *(chain[:cut] for chain in alternatives)], len(draft) + TREE_NODES)
    return None if tree.size == len(draft) else tree


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
