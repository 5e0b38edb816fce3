"""A KV cache that rolls back by moving a length, and keeps a chosen path of a verified tree.

``RollbackCache`` is a transformers ``DynamicCache`` whose full-attention layers write keys and values
in place into a buffer that grows by doubling, and hand attention a view of the first ``length``
positions. Rolling back a rejected draft (``crop``) moves the length; no tensor is reallocated or
copied, where ``DynamicCache`` concatenates the whole cache on every forward pass. After a tree
verification, ``keep`` moves the accepted branch's entries next to the accepted prefix. This module does
not decide what to keep; ``target.py`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

MIN_CAPACITY = 256  # positions first allocated for a layer


class RollbackLayer(DynamicLayer):
    """One layer's keys and values [B, H, capacity, D], of which the first ``length`` positions are live."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.length = 0
        self._keys = self._values = None  # the buffers; self.keys / self.values are views of their live part

    def lazy_initialization(self, key_states, value_states) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        self._allocate(key_states, value_states, max(MIN_CAPACITY, key_states.shape[-2]))
        self.is_initialized = True

    def _allocate(self, key_states, value_states, capacity: int) -> None:
        import torch

        batch, heads, _, dim = key_states.shape
        keys = torch.empty(batch, heads, capacity, dim, dtype=key_states.dtype, device=key_states.device)
        values = torch.empty(batch, heads, capacity, value_states.shape[-1], dtype=value_states.dtype,
                             device=value_states.device)
        if self._keys is not None:  # growing: carry the live positions over
            keys[..., :self.length, :] = self._keys[..., :self.length, :]
            values[..., :self.length, :] = self._values[..., :self.length, :]
        self._keys, self._values = keys, values

    def _expose(self) -> None:
        self.keys = self._keys[..., :self.length, :]
        self.values = self._values[..., :self.length, :]

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self._keys.shape[-2]:
            self._allocate(key_states, value_states, max(end, 2 * self._keys.shape[-2]))
        self._keys[..., self.length:end, :] = key_states
        self._values[..., self.length:end, :] = value_states
        self.length = end
        self._expose()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, tokens_to_remove: int) -> None:
        """Forget the last ``-tokens_to_remove`` positions (transformers 5's convention: a negative count)."""
        if tokens_to_remove > 0:
            raise ValueError("RollbackLayer.crop takes a negative count of positions to remove")
        if tokens_to_remove == 0 or not self.is_initialized:
            return
        self.length = max(self.length + tokens_to_remove, 0)
        self._expose()

    def keep(self, start: int, positions: Sequence[int]) -> None:
        """Keep the first ``start`` positions, then ``positions`` (each ≥ ``start``, ascending), in that order.

        Example: length 8, keep(5, [6]) -> positions 0..4 and 6, length 6.
        """
        import torch

        if not self.is_initialized:
            return
        index = torch.tensor(list(positions), dtype=torch.long, device=self._keys.device)
        end = start + len(index)
        self._keys[..., start:end, :] = self._keys.index_select(-2, index)  # index_select copies first
        self._values[..., start:end, :] = self._values.index_select(-2, index)
        self.length = end
        self._expose()

    def reset(self) -> None:
        self.length = 0
        self._keys = self._values = None
        super().reset()


class RollbackCache(DynamicCache):
    """``DynamicCache`` with a ``RollbackLayer`` for every layer.

    Only for models whose layers all attend to the whole context (Llama and its kind); ``supports``
    tells. ``crop(-n)`` and ``get_seq_length`` behave as ``DynamicCache``'s.
    """

    def __init__(self, config):
        super().__init__(config=config)
        self.layers = [RollbackLayer() for _ in self.layers]

    @staticmethod
    def supports(config) -> bool:
        """Whether every layer of ``config``'s model is full attention (no sliding window, no linear layers)."""
        probe = DynamicCache(config=config)
        return bool(probe.layers) and all(type(layer) is DynamicLayer for layer in probe.layers)

    def keep(self, start: int, positions: Sequence[int]) -> None:
        """Every layer keeps its first ``start`` positions followed by ``positions`` (``RollbackLayer.keep``)."""
        for layer in self.layers:
            layer.keep(start, positions)
