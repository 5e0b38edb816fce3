"""Draft sources: what the model is asked to verify next.

fastapply's own policy (``fastapply``) keeps a pointer into token sequences the answer is likely to
repeat (the merged-file prediction when there is one, the original-file prediction, the update
snippet) and re-synchronises a lost pointer on the longest suffix of the output found in the
sequence, nearest at or after where the pointer was; failing those, it looks up the output's own
history. A draft that reaches the snippet's end or one of its markers goes on in the same pass with
what that re-sync would draft after it. ``POLICIES`` names it beside the baselines, the published rules
of the peers (``baselines.py``): ``none`` (one token per pass), ``pld`` (transformers' prompt lookup)
and ``ngram`` (vLLM's n-gram proposer).
This module does not run the model or choose the draft length; ``decode.py`` does.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fastapply.baselines import NgramDrafter, NoDrafter, PromptLookupDrafter
from fastapply.errors import UsageError


class Drafter(Protocol):
    """A draft source. It may also tell ``calm``: for each token of its last proposal, whether it lies
    where the answer seldom leaves the source (``risk.py``); absent or None: no such knowledge. A drafter
    whose next proposal would cost real work (a model's forward passes) says ``costly = True`` (read
    before each proposal): after the decode loop declines a draft, it is asked again only to probe
    (``decode.PROBE_EVERY``)."""

    source: str  # where the last proposal came from ("prediction", "snippet", ...); "" when none

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        """Up to ``k`` tokens that may follow ``out``."""

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        """``out`` grew by a pass that accepted ``n_accepted`` draft tokens (plus the model's own)."""


@dataclass(frozen=True)
class DraftContext:
    """Everything a draft policy may draw on for one request (token ids)."""

    prompt_ids: Sequence[int]
    prediction_ids: Sequence[int]  # the answer with the original file inside, then EOS
    snippet_ids: Sequence[int] = ()  # the update snippet alone
    merged_ids: Sequence[int] | None = None  # the answer with a merged candidate inside, then EOS
    newline_ids: frozenset[int] = frozenset()  # ids whose text contains a line break
    # per pointer source ("merged", "prediction", "snippet"): positions where the answer may leave it
    risk: Mapping[str, frozenset[int]] = dataclasses.field(default_factory=dict)
    snippet_markers: frozenset[int] = frozenset()  # where the snippet's marker lines start: drafts stop there


MIN_MATCH = 3  # tokens a re-sync match needs, unless it ends at a line break
MAX_MATCH = 64  # longer suffix matches are not told apart
MAX_OTHERS = 3  # re-sync points offered beside the best one, for tree verification
MAX_ECHO = 1024  # longer repeats of the output's own history are not told apart


class PointerSource:
    """A token sequence with a pointer to the token expected next in the output.

    Example: tokens=[5, 6, 7, 8, 5, 6, 7, 9], pointer lost, output ends [.., 5, 6, 7] and the pointer
    was at 4 -> both occurrences match 3 tokens; the one ending at or after 4 wins, so the pointer is 7
    and the proposal starts [9].
    """

    def __init__(self, name: str, tokens: Sequence[int], newline_ids: frozenset[int] = frozenset(),
                 risky: Collection[int] = (), stops: Collection[int] = ()):
        self.name = name
        self.tokens = list(tokens)
        self.newline_ids = newline_ids
        self.risky = frozenset(risky)  # tokens where the answer is likely to leave (risk.py)
        self.stops = sorted(stops)  # tokens the answer never writes: a draft ends before them
        self.pointer: int | None = 0  # None: lost
        self.run = 0  # length of the current matched run ending at the pointer
        self._trigrams: dict[tuple[int, int, int], list[int]] = defaultdict(list)
        self._newlines: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self.tokens)):
            if i + MIN_MATCH <= len(self.tokens):
                self._trigrams[tuple(self.tokens[i:i + MIN_MATCH])].append(i)
            if self.tokens[i] in newline_ids:
                self._newlines[self.tokens[i]].append(i)
        self._last_pointer = 0
        self.others: list[int] = []  # the next best re-sync points, after a re-sync

    def follow(self, new: Sequence[int], out: Sequence[int]) -> None:
        """Advance over ``new`` output tokens while they match; re-synchronise when they do not."""
        p = self.pointer
        self.others = []
        if p is not None and self.tokens[p:p + len(new)] == list(new):
            self.pointer = p + len(new)
            self.run += len(new)
        else:
            self.resync(out)
        if self.pointer is not None:
            self._last_pointer = self.pointer

    def resync(self, out: Sequence[int]) -> None:
        """Point after the longest suffix of ``out`` found in the tokens, nearest at or after the old
        pointer; the next best matches (longest, then nearest) are kept in ``others``."""
        ranked = self.matches(out)
        self.pointer, self.run = ranked[0] if ranked else (None, 0)
        self.others = [end for end, _ in ranked[1:1 + MAX_OTHERS]]

    def matches(self, out: Sequence[int]) -> list[tuple[int, int]]:
        """Every ``(end, length)`` where a suffix of ``out`` is found in the tokens with something after
        it, best first (``resync``'s order); the pointer does not move."""
        candidates: list[int] = []  # start positions of a match of the last MIN_MATCH tokens (or 1 newline)
        width = 0
        if len(out) >= MIN_MATCH:
            candidates = self._trigrams.get(tuple(out[-MIN_MATCH:]), [])
            width = MIN_MATCH
        if not candidates and out and out[-1] in self.newline_ids:
            candidates = self._newlines.get(out[-1], [])
            width = 1
        matches: list[tuple[int, int]] = []  # (end, length)
        for start in candidates:
            end = start + width
            if end >= len(self.tokens):
                continue  # nothing left to propose after it
            length = width
            while (length < MAX_MATCH and start - (length - width) > 0 and length < len(out)
                   and self.tokens[start - (length - width) - 1] == out[-length - 1]):
                length += 1
            matches.append((end, length))
        return sorted(matches, key=functools.cmp_to_key(self._better))

    def _better(self, a: tuple[int, int], b: tuple[int, int]) -> int:
        """Order of re-sync matches (end, length): longer first, then nearer the old pointer."""
        if a[1] != b[1]:
            return b[1] - a[1]
        if a[0] == b[0]:
            return 0
        return -1 if _nearer(a[0], b[0], self._last_pointer) else 1

    def live(self) -> bool:
        """Whether the pointer has anything to propose."""
        return self.pointer is not None and self.pointer < self._end()

    def propose(self, k: int, at: int | None = None) -> list[int]:
        """Up to ``k`` tokens from the pointer (or from ``at``), never past a stop."""
        at = self.pointer if at is None else at
        if at is None:
            return []
        return self.tokens[at:min(at + k, self._end(at))]

    def _end(self, at: int | None = None) -> int:
        """Where a draft from the pointer (or ``at``) must end: the next stop, else the end of the tokens."""
        at = self.pointer if at is None else at
        i = bisect.bisect_left(self.stops, at)
        return self.stops[i] if i < len(self.stops) else len(self.tokens)

    def calm(self, k: int, at: int | None = None) -> list[bool]:
        """For each of the next ``k`` tokens ``propose`` gives, whether it is outside the risky lines."""
        at = self.pointer if at is None else at
        if at is None:
            return []
        end = min(at + k, self._end(at))
        return [i not in self.risky for i in range(at, end)]

    def alternatives(self, k: int) -> list[list[int]]:
        """What the next best re-sync points would propose, right after a re-sync (else nothing)."""
        return [self.tokens[end:end + k] for end in self.others]


def _nearer(end: int, other: int, pointer: int) -> bool:
    """Whether ``end`` is a better re-sync point than ``other``: at or after the pointer and closest to
    it, else (both before it) the later one."""
    if (end >= pointer) != (other >= pointer):
        return end >= pointer
    return end < other if end >= pointer else end > other


class SpecEditsDrafter:
    """fastapply's policy: pointer sources (merged prediction, original prediction, snippet), the one with
    the longest current matched run proposing (ties in that order); where none is live, the output's own
    history (DESIGN §4, source 4), and where that has no match either, a model-run fallback if given
    (``fastapply+draft-model``, ``fastapply+medusa``)."""

    def __init__(self, context: DraftContext, fallback: Drafter | None = None):
        def source(name: str, tokens: Sequence[int], stops: Collection[int] = ()) -> PointerSource:
            return PointerSource(name, tokens, context.newline_ids, context.risk.get(name, ()), stops)

        sources = []
        if context.merged_ids is not None and list(context.merged_ids) != list(context.prediction_ids):
            sources.append(source("merged", context.merged_ids))
        sources.append(source("prediction", context.prediction_ids))
        if context.snippet_ids:
            sources.append(source("snippet", context.snippet_ids, context.snippet_markers))
            sources[-1].pointer = None  # the snippet is only reached by re-sync
        self.sources = sources
        self.history = HistoryLookup()
        self.fallback = fallback if fallback is not None else self.history
        self.source = ""
        self._history_hit = False  # whether the history had a match at the last update, ahead of a model fallback
        self.calm: list[bool] | None = None
        self._seen = 0

    @property
    def costly(self) -> bool:
        """Whether the next proposal would run the fallback's model: it is costly, no source is live and
        the history has no match."""
        return (getattr(self.fallback, "costly", False) and not self._history_hit
                and not any(s.live() for s in self.sources))

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        live = [s for s in self.sources if s.live()]
        if live:
            best = max(live, key=lambda s: s.run)  # max() keeps the first of equal runs: source order
            if self.history.echo(out) > max(best.run, MAX_MATCH):
                # the answer has been repeating itself for longer than any source matches: it loops
                self.source, self.calm = self.history.source, None
                return self.history.propose(out, k)
            self.source, self.calm = best.name, best.calm(k)
            return self._chain(out, best.propose(k), k)
        self.calm = None
        draft = self.history.propose(out, k)
        if draft or self.fallback is self.history:
            self.source = self.history.source if draft else ""
            return draft
        draft = self.fallback.propose(out, k)
        self.source = self.fallback.source if draft else ""
        return draft

    def _chain(self, out: Sequence[int], draft: list[int], k: int) -> list[int]:
        """``draft``, and where it ends short of ``k`` at its source's end or a stop (the snippet's last
        line, a marker), what the re-sync after it would draft: the source whose suffix match with
        ``out + draft`` is longest goes on from there, in this pass instead of the next one. The first
        token past the seam is counted risky (``calm``)."""
        if not draft or len(draft) >= k:
            return draft
        found = [(length, source, end) for source in self.sources
                 for end, length in source.matches([*out, *draft])[:1 + MAX_OTHERS] if source.propose(1, end)]
        if not found:
            return draft
        _, source, at = max(found, key=lambda f: f[0])  # max() keeps the first of equal lengths
        more = source.propose(k - len(draft), at)
        self.calm = [*(self.calm or [False] * len(draft)), False, *source.calm(len(more), at)[1:]]
        return [*draft, *more]

    def candidates(self, out: Sequence[int], k: int) -> list[list[int]]:
        """``propose``'s draft first, then the alternatives a tree verifies beside it: the other live
        sources' drafts and every source's next best re-sync points; where no source is live, the
        fallback's own candidates (draft heads' top-k) if it has them and the history has no match."""
        live = [s for s in self.sources if s.live()]
        if not live and hasattr(self.fallback, "candidates") and not self._history_hit:
            chains = self.fallback.candidates(out, k)
            self.source = self.fallback.source if chains and chains[0] else ""
            self.calm = None
            return chains
        chains = [self.propose(out, k)]
        for source in live:
            chains.append(source.propose(k))
        for source in self.sources:
            chains.extend(source.alternatives(k))
        return [chains[0], *(chain for chain in chains[1:] if chain and chain != chains[0])]

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        new = out[self._seen:]
        self._seen = len(out)
        for source in self.sources:
            source.follow(new, out)
        # only a model-run fallback waits on the history (with none, the history is the fallback itself)
        self._history_hit = self.fallback is not self.history and bool(self.history.propose(out, 1))
        self.fallback.update(out, n_accepted)


class HistoryLookup:
    """n-gram lookup in the output itself: what followed the most recent earlier occurrence of its last
    3 tokens. ``echo`` tells how long the output has been repeating itself there.

    >>> HistoryLookup().propose([7, 1, 2, 3, 8, 1, 2, 3], 6)   # after 1 2 3 came 8: then 1 2 3 8 again
    [8, 1, 2, 3, 8, 1]
    """

    source = "history"

    def __init__(self):
        self._latest: dict[tuple[int, ...], int] = {}  # trigram -> start of its latest occurrence
        self._indexed = 0  # trigrams starting before this are in ``_latest``

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        """What followed the match, and past the end of ``out`` the same again: a loop drafted on."""
        start = self._match(out)
        if start is None:
            return []
        draft: list[int] = []
        for i in range(start + MIN_MATCH, start + MIN_MATCH + k):
            draft.append(out[i] if i < len(out) else draft[i - len(out)])
        return draft

    def echo(self, out: Sequence[int]) -> int:
        """How many tokens before the end of ``out`` equal those before the match ``propose`` follows
        (0 without one): long when the output repeats a stretch of itself, as a looping answer does."""
        start = self._match(out)
        if start is None:
            return 0
        end, length = start + MIN_MATCH, MIN_MATCH
        while length < MAX_ECHO and end - length > 0 and out[end - length - 1] == out[len(out) - length - 1]:
            length += 1
        return length

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        pass  # ``_match`` indexes what it has not seen yet

    def _match(self, out: Sequence[int]) -> int | None:
        """Start of the latest occurrence of the last ``MIN_MATCH`` tokens before the one ending ``out``."""
        if len(out) <= MIN_MATCH:
            return None
        for i in range(self._indexed, len(out) - MIN_MATCH):
            self._latest[tuple(out[i:i + MIN_MATCH])] = i
        self._indexed = max(self._indexed, len(out) - MIN_MATCH)
        return self._latest.get(tuple(out[-MIN_MATCH:]))


POLICIES = {
    "fastapply": SpecEditsDrafter,
    "none": lambda context: NoDrafter(),
    "pld": PromptLookupDrafter,
    "ngram": NgramDrafter,
}
# Drafters that run a model of their own: the caller holds that model and passes a factory per name,
# called with the request's context and the target it is decoded on (draft heads read its hidden state).
MODEL_DRAFTERS = ("draft-model", "medusa")
MODEL_POLICIES = (*MODEL_DRAFTERS, *(f"fastapply+{name}" for name in MODEL_DRAFTERS))
ModelDrafters = Mapping[str, Callable[[DraftContext, Any], Drafter]]


def make_drafter(policy: str, context: DraftContext, models: ModelDrafters | None = None,
                 target: Any = None) -> Drafter:
    """The drafter registered under ``policy`` for one request decoded on ``target``. ``models`` builds
    the model-run drafters (``draft-model``, ``medusa``) that ``policy`` names, alone or as
    ``fastapply+NAME``'s fallback."""
    models = models or {}
    check_policy(policy, models)
    if policy in MODEL_POLICIES:
        name = policy.removeprefix("fastapply+")
        drafter = models[name](context, target)
        return SpecEditsDrafter(context, fallback=drafter) if policy != name else drafter
    return POLICIES[policy](context)


def check_policy(policy: str, loaded: Collection[str]) -> None:
    """``UsageError`` for an unknown policy, or one whose model-run drafter is not among ``loaded``."""
    if policy in MODEL_POLICIES:
        name = policy.removeprefix("fastapply+")
        if name not in loaded:
            option = "--draft-model" if name == "draft-model" else "--medusa"
            raise UsageError(f"the draft policy {policy!r} needs {option} PATH")
    elif policy not in POLICIES:
        raise UsageError(f"unknown draft policy {policy!r}; choose one of: "
                         f"{', '.join([*POLICIES, *MODEL_POLICIES])}")
