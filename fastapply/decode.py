"""The speculative loop: propose -> verify -> accept -> roll back, until a stop token or the budget.

Each pass the drafter proposes up to ``k`` tokens, the target checks them all in one forward pass
and returns its own choice at every position; the longest prefix of the draft equal to those choices
is kept, plus the target's choice right after it, and the target's cache is rolled back past the
rest. So the output is token for token what the target alone would produce (greedy), or a sample from
the target's own distribution (with a deterministic draft, keeping the draft while it equals the
target's samples is exactly the speculative-sampling acceptance rule).

The draft length ``k`` is chosen by cost (``draftlen.py``): from ``target.cost(k)`` and the recent
acceptance rates of the source that is proposing (apart for the tokens it calls calm), the first pass of
the plan that gets through its draft in the least expected time.
This module does not print; ``DecodeStats`` is data for the caller.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from fastapply.draft import Drafter
from fastapply.draftlen import (
    AcceptanceTracker,
    calm_key,
    choose_draft_length,
    survival_curve,
    tree_pays,
)
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
    draft = (through_stop(opening_draft(drafter, min(MAX_DRAFT, max_new_tokens - 1)), stop_ids)
             if hasattr(target, "prefill_draft") else [])
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
            chains = [through_stop(chain, stop_ids) for chain in chains]
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


def through_stop(draft: list[int], stop_ids: Collection[int]) -> list[int]:
    """``draft`` up to and with its first stop id: a token drafted after it is never written (kept, the
    stop ends the answer; rejected, so is the rest), so it is not verified (a draft model drafts on past
    the EOS it foresees).

    >>> through_stop([5, 6, 1, 7, 8], {1}), through_stop([5, 6], {1})
    ([5, 6, 1], [5, 6])
    """
    cut = stop_index(draft, 0, stop_ids, ())
    return draft if cut is None else draft[:cut]


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
