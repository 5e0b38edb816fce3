"""A tree of draft tokens, verified in one forward pass.

Several candidate continuations (the pointer's re-sync points, the other sources, draft heads' top-k)
are merged into a trie whose node 0 is the root: the last accepted token, which every pass feeds
first. In the pass each node sees the cached context, its ancestors and itself, and sits at position
``base + depth``; the model's choice at every node is then what it would write after that node's
branch, so the longest branch that agrees with the choices is what plain decoding would have written.
This module builds the trie, its attention rule and positions, and reads the accepted branch; it does
not run the model (``target.py``) or choose candidates (``draft.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class DraftTree:
    """Nodes in insertion order (a parent always before its children); node 0 is the root.

    Example: chains [[5, 6], [5, 7], [8]] -> tokens (root, 5, 6, 7, 8), parents (-1, 0, 1, 1, 0),
    depths (0, 1, 2, 2, 1).
    """

    tokens: tuple[int, ...]  # tokens[0] is a placeholder: the root's token is the target's pending one
    parents: tuple[int, ...]  # parents[0] == -1
    depths: tuple[int, ...]

    @classmethod
    def from_chains(cls, chains: Sequence[Sequence[int]], max_nodes: int | None = None) -> DraftTree:
        """The trie of ``chains`` (best first), stopping before it would pass ``max_nodes`` draft nodes.

        >>> DraftTree.from_chains([[5, 6], [5, 7], [8]]).parents
        (-1, 0, 1, 1, 0)
        """
        tokens, parents, depths = [-1], [-1], [0]
        children: dict[tuple[int, int], int] = {}  # (parent, token) -> node
        for chain in chains:
            node = 0
            for token in chain:
                child = children.get((node, token))
                if child is None:
                    if max_nodes is not None and len(tokens) - 1 >= max_nodes:
                        break
                    child = len(tokens)
                    children[(node, token)] = child
                    tokens.append(token)
                    parents.append(node)
                    depths.append(depths[node] + 1)
                node = child
        return cls(tuple(tokens), tuple(parents), tuple(depths))

    @property
    def size(self) -> int:
        """Draft nodes (the root not counted)."""
        return len(self.tokens) - 1

    def ancestors(self, node: int) -> list[int]:
        """``node`` and its ancestors up to the root, root first."""
        path = []
        while node >= 0:
            path.append(node)
            node = self.parents[node]
        return path[::-1]

    def visibility(self) -> list[list[bool]]:
        """``[i][j]``: whether node ``i`` attends to node ``j`` (its ancestors and itself).

        >>> DraftTree.from_chains([[5, 6], [8]]).visibility()
        [[True, False, False, False], [True, True, False, False], [True, True, True, False], [True, False, False, True]]
        """
        n = len(self.tokens)
        rows = []
        for node in range(n):
            row = [False] * n
            for ancestor in self.ancestors(node):
                row[ancestor] = True
            rows.append(row)
        return rows

    def accepted(self, choices: Sequence[int]) -> list[int]:
        """The longest branch whose every token is the model's choice at its parent: its nodes after the root.

        ``choices[i]`` is the model's token after node ``i``'s branch.
        >>> DraftTree.from_chains([[5, 6], [5, 7], [8]]).accepted([5, 7, 0, 0, 0])
        [1, 3]
        """
        path, node = [], 0
        while True:
            child = next((c for c in range(node + 1, len(self.tokens))
                          if self.parents[c] == node and self.tokens[c] == choices[node]), None)
            if child is None:
                return path
            path.append(child)
            node = child
