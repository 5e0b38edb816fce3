"""Targets that choose a known reference output instead of the model's own tokens, so that a run's passes
(and, with real forward passes, its time) measure the draft policy alone: ``fastapply bench
--acceptance replay``, the eval's replay engine and the draft benchmarks use them.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapply.decode import common_prefix
from fastapply.target import HFTarget


class ReplayTarget:
    """A target whose choice at every position is the reference output; it does no model work.

    The decode loop's passes then measure the draft policy alone. ``cost`` is a relative per-pass
    cost shaped like a GPU's (a pass of k tokens costs ``1 + per_token * k``).
    """

    def __init__(self, reference: Sequence[int], stop_id: int, per_token: float = 0.002):
        self.reference = list(reference)
        self.stop_id = stop_id
        self.per_token = per_token
        self.position = 0  # index in reference of the pending token
        self.choices: list[int] = []

    def _at(self, i: int) -> int:
        return self.reference[i] if i < len(self.reference) else self.stop_id

    def prefill(self, ids: list[int]) -> int:
        self.position = 0
        return self._at(0)

    def verify(self, draft: list[int]) -> list[int]:
        self.choices = [self._at(self.position + 1 + i) for i in range(len(draft) + 1)]
        return self.choices

    def prefill_draft(self, ids: list[int], draft: list[int]) -> list[int]:
        self.position = -1  # the prompt's last token is pending: choice 0 is the reference's first token
        return self.verify(draft)

    def accept(self, n: int) -> None:
        self.position += n + 1

    verifies_trees = True

    def verify_tree(self, tree) -> list[int]:
        # Only nodes on the reference's own branch are ever reached, and there the choice is the
        # reference token one deeper.
        self.choices = [self._at(self.position + 1 + depth) for depth in tree.depths]
        return self.choices

    def accept_path(self, path: Sequence[int]) -> None:
        self.position += len(path) + 1

    def cost(self, k: int) -> float:
        return 1.0 + self.per_token * k


class ReplayedHFTarget(HFTarget):
    """Real forward passes of a transformers model, so every pass costs what it really costs, whose
    choices are nevertheless the reference output (as ``ReplayTarget``).

    Used by ``fastapply bench --acceptance replay`` to time decoding on a model whose weights cannot
    perform the task (random or untrained) as if it produced the reference answer.
    """

    def __init__(self, model, reference: Sequence[int], stop_id: int, **kwargs):
        super().__init__(model, **kwargs)
        self.replay = ReplayTarget(reference, stop_id)

    def prefill(self, ids: list[int]) -> int:
        super().prefill(ids)
        self.pending = self.replay.prefill(ids)
        return self.pending

    def verify(self, draft: list[int]) -> list[int]:
        choices = self.replay.verify(draft)
        agreed = common_prefix(draft, choices)
        super().verify(draft)[agreed]  # the logits a model choosing the reference would compute
        self.choices = choices
        return self.choices

    def prefill_draft(self, ids: list[int], draft: list[int]) -> list[int]:
        choices = self.replay.prefill_draft(ids, draft)
        agreed = common_prefix(draft, choices)
        super().prefill_draft(ids, draft)[agreed]  # the logits a model choosing the reference would compute
        self.choices = choices
        return self.choices

    def accept(self, n: int) -> None:
        super().accept(n)
        self.replay.accept(n)

    def verify_tree(self, tree) -> list[int]:
        real = super().verify_tree(tree)
        self.choices = self.replay.verify_tree(tree)
        for node in (0, *tree.accepted(self.choices)):
            real[node]  # the logits a model choosing the reference would compute
        return self.choices

    def accept_path(self, path: Sequence[int]) -> None:
        super().accept_path(path)
        self.replay.accept_path(path)
