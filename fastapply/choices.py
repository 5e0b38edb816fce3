"""A verify's choices, turned from its hidden states into logits only when read (``Choices``).

The decode loop reads a verify's choices in order up to the first draft token the model rejects, and a
tree's along the accepted branch only; computing the output layer's logits chunk by chunk as they are
read spares it the positions no one reads. ``target.HFTarget`` hands them out; this module runs only
the chooser it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# A verify turns hidden states into logits this many positions at a time at first (unless its reader
# expects more), then twice as many each time: the positions after the first draft token the model
# rejects need none.
LOGIT_CHUNK = 16
# The largest first chunk a reader's expectation sets. Modelled on the 20 bench tasks' 135 passes with
# this CPU's output layer (25 ms a chunk + 0.7 ms a position): 16 doubling 21.6 s, expected reads
# uncapped 17.6 s, capped at 64 17.7 s, at 128 17.0 s, at 256 17.3 s.
EXPECT_AT_MOST = 128


class Choices(Sequence):
    """A verify's choices, turned from its hidden states into logits only when read: the decode loop
    reads them in order up to the first draft token the model rejects, and a tree's along the accepted
    branch only, so the output layer never runs for the positions no one reads. Computed in chunks, each
    when one of its positions is read: ``LOGIT_CHUNK`` positions first (or as many as the caller says it
    expects to read, ``expect``), then twice as many each chunk; a chunk whose rest would be shorter
    than itself takes the rest too, since each chunk reads the whole output layer once (on a CPU a
    16-position chunk costs as much as a hundred positions in one).

    >>> import torch
    >>> choices = Choices(torch.zeros(60, 2), lambda hidden: [len(hidden)] * len(hidden))
    >>> len(choices), choices[0], choices[17], choices.computed
    (60, 16, 44, 60)
    >>> tree = Choices(torch.zeros(60, 2), lambda hidden: [len(hidden)] * len(hidden))
    >>> tree[0], tree.computed   # the positions after the first chunk are never computed
    (16, 16)
    >>> expected = Choices(torch.zeros(60, 2), lambda hidden: [len(hidden)] * len(hidden))
    >>> expected.expect(40)   # a draft the caller expects to keep nearly whole: one chunk
    >>> expected[0], expected.computed, expected == [60] * 60
    (60, 60, True)
    """

    def __init__(self, hidden, choose: Callable[[object], list[int]]):
        self._hidden, self._choose = hidden, choose  # [S, H]; hidden states [N, H] -> token ids
        self._first = LOGIT_CHUNK  # the first chunk's size
        self._bounds: list[tuple[int, int]] = []  # each chunk's [start, end), as far as they are laid out
        self._chunks: dict[int, list[int]] = {}  # chunk start -> its choices

    def expect(self, reads: int) -> None:
        """The caller expects to read about ``reads`` positions in order: the first chunk covers them, up
        to ``EXPECT_AT_MOST`` (a draft rejected early wastes no more). Only before the first read."""
        if not self._bounds:
            self._first = min(max(LOGIT_CHUNK, reads), EXPECT_AT_MOST)

    @property
    def computed(self) -> int:
        """Positions whose logits have been computed."""
        return sum(len(chunk) for chunk in self._chunks.values())

    def __len__(self) -> int:
        return len(self._hidden)

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Choices({len(self)} positions, {self.computed} computed)"

    def _chunk(self, i: int) -> tuple[int, int]:
        """The bounds [start, end) of the chunk that holds position ``i``."""
        while not self._bounds or self._bounds[-1][1] <= i:
            start = self._bounds[-1][1] if self._bounds else 0
            size = self._first << len(self._bounds)
            self._bounds.append((start, len(self) if len(self) - (start + size) < size else start + size))
        return next(bounds for bounds in self._bounds if i < bounds[1])

    def __getitem__(self, i):
        import torch

        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        start, end = self._chunk(i)
        if start not in self._chunks:
            with torch.inference_mode():
                self._chunks[start] = self._choose(self._hidden[start:end])
        return self._chunks[start][i - start]
