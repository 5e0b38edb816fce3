"""How long a draft to verify: each source's recent acceptance, and the plan that costs the least.

``AcceptanceTracker`` keeps every draft source's per-token acceptance rate as decayed counts (its calm
tokens apart, ``risk.py``); ``choose_draft_length`` plans the next passes from ``target.cost(k)`` and
those rates and returns the first pass's draft length; ``tree_pays`` says whether verifying alternative
branches beside a draft gains. ``decode.py`` asks; this module neither drafts nor runs the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

DRAFT_SIZES = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


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
