"""The model being decoded, behind the ``Target`` protocol.

``HFTarget`` runs a transformers causal LM with its own KV cache: ``verify`` feeds the last accepted
token plus a draft in one forward pass and returns the model's choice at every position; ``accept``
keeps part of the draft and rolls the cache back past the rest. ``cost`` is what a verify measured
(``costs.py``); a verify's choices are computed as they are read (``choices.py``). Loading the model, and
what is read off a loaded one, is ``loading.py``'s; ``replay.py`` holds targets that choose a known
reference instead. This module does not choose drafts or loop; ``decode.py`` does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

from fastapply.choices import Choices
from fastapply.costs import (CALIBRATION_SIZES, SHARED_BELOW, CostModel, CpuShare, cost_key, store_costs,
                             stored_costs)
from fastapply.errors import FastapplyError
from fastapply.loading import cache_keyword, output_head, synchronize

log = logging.getLogger(__name__)


class Target(Protocol):
    def prefill(self, ids: list[int]) -> int:
        """Run the prompt; return the model's next token (not yet in the cache)."""

    def verify(self, draft: list[int]) -> list[int]:
        """Feed [last token] + draft in one pass; return the model's choice at each of len(draft)+1 positions."""

    def accept(self, n: int) -> None:
        """Keep the first ``n`` draft tokens of the last ``verify``; drop the rest from the cache."""

    # A target may also offer ``prefill_draft(ids, draft) -> choices``: ``prefill`` and a ``verify`` of a
    # guess at the answer's first tokens in one pass (choice 0: the model's first token), then ``accept``.

    def cost(self, k: int) -> float:
        """Seconds (or relative units) that verifying a draft of ``k`` tokens costs."""


class HFTarget:
    """A transformers causal LM with a KV cache that rolls back by cropping.

    Greedy when ``temperature == 0``; otherwise every verified position is sampled from the model's
    distribution at that temperature (the decode loop keeps the draft while it equals the samples).
    ``screen_logits``: a greedy float32 model on a CPU where int8 products are faster finds a verify's (and
    a tree's) choices through the output layer in int8 where that is proven to change none (``screen.py``).
    """

    def __init__(self, model, temperature: float = 0.0, seed: int | None = None, prefill_chunk: int = 1024,
                 model_key: str | None = None, keep_hidden: bool = False, screen_logits: bool = True):
        import torch

        from fastapply.attention import use_grouped_attention

        self.model = model
        use_grouped_attention(model)  # a CPU verify attends grouped heads without copying the cache
        self.temperature = temperature
        self.prefill_chunk = prefill_chunk
        self.device = next(model.parameters()).device
        self.generator = torch.Generator(device=self.device)
        if seed is not None:
            self.generator.manual_seed(seed)
        self.model_key = model_key or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.cache = None
        self.pending: int | None = None  # the model's last choice, not yet fed to the cache
        self.choices: list[int] = []  # the model's choices from the last verify
        from fastapply.kvcache import RollbackCache

        # A cache that rolls back by moving a length, where every layer attends to the whole context;
        # it is also what keeps a verified tree's branch, so only then can ``verify_tree`` run.
        self.verifies_trees = RollbackCache.supports(model.config)
        self._tree_base = 0  # cache length before the last verify_tree
        self._cost: CostModel | None = None
        self._cpu_share: float | None = None  # the share of the CPU the last prefill had (``costs.CpuShare``)
        # With ``keep_hidden``, ``last_hidden`` is the decoder's final (normed) hidden state [H] at the
        # position whose logits chose ``pending``: what draft heads read to propose the tokens after it.
        self.last_hidden = None
        self._hidden = None  # [S, H] of the last forward pass
        self._decoder = None
        core = model.get_base_model() if hasattr(model, "get_base_model") else model
        self._body, self._head = core.get_decoder(), output_head(model)
        self._cache_keyword = cache_keyword(core)
        if keep_hidden:
            self.track_hidden()
        # Whether the output layer alone turns the decoder's hidden states into the model's logits (not
        # so where a model scales or caps them after it): then a verify computes them chunk by chunk,
        # up to the first draft token the model rejects. Checked against the model at the first prefill.
        self._head_apart: bool | None = None
        self._verified = 0  # positions fed by the last verify: pending + draft
        self._text: list[int] = []  # the prompt's last tokens: the draft that verify costs are timed with
        self.screen_logits = screen_logits
        self._screen = None  # the output layer's int8 screen (screen.py); False: not used here
        self._sample = None  # the first prefill's last hidden states, until the screen is chosen

    def track_hidden(self) -> None:
        """Keep ``last_hidden`` from the next forward pass on (``keep_hidden``); call it before ``prefill``."""
        self._decoder = self._body

    def _forward(self, **kwargs):
        """One forward pass of the model; with ``keep_hidden``, its decoder's last hidden states kept."""
        if self._decoder is None:
            return self.model(**kwargs)
        hook = self._decoder.register_forward_hook(
            lambda module, args, output: setattr(self, "_hidden", output.last_hidden_state[0]))
        try:
            return self.model(**kwargs)
        finally:
            hook.remove()

    # -- the protocol ------------------------------------------------------------------------
    def prefill(self, ids: list[int]) -> int:
        if not ids:
            raise FastapplyError("the prompt is empty")
        self.cache = self._new_cache()
        watch = CpuShare(self.device)
        self.extend(ids)
        self._cpu_share = watch.share()
        self._text = ids[-CALIBRATION_SIZES[-1]:]
        return self.pending

    def extend(self, ids: list[int]) -> None:
        """Feed ``ids`` after what the cache holds, in chunks of ``prefill_chunk``, keeping the logits of
        the last one only; ``pending`` becomes the model's choice after them."""
        import torch

        logits = None
        check = self._head_apart is None and self._decoder is None
        if check:
            self._decoder = self._body  # keep this prefill's hidden states, to check the output layer
        try:
            with torch.inference_mode():
                for start in range(0, len(ids), self.prefill_chunk):
                    chunk = torch.tensor([ids[start:start + self.prefill_chunk]], device=self.device)  # [1, S]
                    logits = self._forward(input_ids=chunk, **self._cached(), logits_to_keep=1).logits  # [1, 1, V]
                if self._head_apart is None:
                    self._head_apart = (self._head is not None and self._hidden is not None
                                        and torch.equal(self._head(self._hidden[-1:]), logits[0]))
                if self._screen is None:
                    self._sample = self._hidden  # what the output layer's screen picks its channels from
        finally:
            if check:
                self._decoder, self._hidden = None, None
        self.pending = self._choose(logits[0])[0]
        if self._hidden is not None:
            self.last_hidden = self._hidden[-1]

    def prefill_draft(self, ids: list[int], draft: list[int]) -> Sequence[int]:
        """``prefill(ids)`` and ``verify(draft)`` in one forward pass, the prompt's last chunk and the draft
        together: ``draft`` guesses the answer's first tokens, so choice 0 is the model's first token and
        ``accept(n)`` follows as after a verify. Where the answer begins as drafted, its first pass costs
        what the limit's does for the same tokens, plus their rows of the output layer."""
        import torch

        if not ids:
            raise FastapplyError("the prompt is empty")
        if not draft:
            return [self.prefill(ids)]
        tail = (len(ids) - 1) % self.prefill_chunk + 1  # the prompt's last chunk: fed with the draft
        self.cache = self._new_cache()
        watch = CpuShare(self.device)
        if len(ids) > tail:
            self.extend(ids[:-tail])
        tracked = self._decoder is not None
        self._decoder = self._body  # this pass's hidden states: the draft's choices are read from them
        try:
            with torch.inference_mode():
                x = torch.tensor([[*ids[-tail:], *draft]], device=self.device)  # [1, tail + k]
                logits = self._forward(input_ids=x, **self._cached(), logits_to_keep=1).logits  # [1, 1, V]
                hidden = self._hidden  # [tail + k, H]
                if self._head_apart is None:
                    self._head_apart = self._head is not None and torch.equal(self._head(hidden[-1:]), logits[0])
                if not self._head_apart:  # logits changed past the output layer: the verified positions again
                    self.cache.crop(-(len(draft) + 1))
                    x = torch.tensor([[ids[-1], *draft]], device=self.device)
                    logits = self._forward(input_ids=x, **self._cached(), logits_to_keep=len(draft) + 1).logits
                    hidden = torch.cat([hidden[:tail - 1], self._hidden])
        finally:
            if not tracked:
                self._decoder = None
        if self._screen is None:
            self._sample = hidden[:tail]  # what the output layer's screen picks its channels from
        self._cpu_share = watch.share()
        self._text = ids[-CALIBRATION_SIZES[-1]:]
        self._verified = len(draft) + 1  # the prompt's last token and the draft: what accept() crops
        self._hidden = hidden[tail - 1:] if tracked else None
        self.choices = Choices(hidden[tail - 1:], self._choose_hidden) if self._head_apart else self._choose(logits[0])
        return self.choices

    def rollback(self, n: int) -> None:
        """Forget the last ``n`` positions of the cache."""
        if n > 0:
            self.cache.crop(-n)

    def verify(self, draft: list[int]) -> Sequence[int]:
        import torch

        fed = [self.pending, *draft]
        self._verified = len(fed)
        with torch.inference_mode():
            x = torch.tensor([fed], device=self.device)  # [1, k+1]
            if not self._head_apart:
                logits = self._forward(input_ids=x, **self._cached(), logits_to_keep=len(fed)).logits  # [1, k+1, V]
                self.choices = self._choose(logits[0])
                return self.choices
            hidden = self._decoded(input_ids=x, **self._cached())  # [k+1, H]
        self.choices = Choices(hidden, self._choose_hidden)
        return self.choices

    def accept(self, n: int) -> None:
        fed = self._verified  # pending + draft
        keep = 1 + n
        if keep < fed:
            self.cache.crop(-(fed - keep))
        self.pending = self.choices[n]
        if self._hidden is not None:
            self.last_hidden = self._hidden[n]

    # -- tree verification -------------------------------------------------------------------
    def verify_tree(self, tree) -> Sequence[int]:
        """Feed [last token] + the tree's nodes in one pass, each seeing the context and its own branch
        at position context + depth; return the model's choice after every node (node 0: the last token),
        computed as they are read where the output layer alone gives the logits."""
        import torch

        base = self.cache.get_seq_length()
        nodes = len(tree.tokens)
        dtype = next(self.model.parameters()).dtype
        with torch.inference_mode():
            x = torch.tensor([[self.pending, *tree.tokens[1:]]], device=self.device)  # [1, N]
            seen = torch.ones(nodes, base + nodes, dtype=torch.bool, device=self.device)  # [N, base + N]
            seen[:, base:] = torch.tensor(tree.visibility(), device=self.device)
            mask = torch.zeros(1, 1, nodes, base + nodes, dtype=dtype, device=self.device)
            mask.masked_fill_(~seen, torch.finfo(dtype).min)  # additive: eager and sdpa attention alike
            positions = torch.tensor([[base + depth for depth in tree.depths]], device=self.device)  # [1, N]
            inputs = {"input_ids": x, "attention_mask": mask, "position_ids": positions, **self._cached()}
            if self._head_apart:  # the nodes' choices through the output layer (its screen, where used)
                self.choices = Choices(self._decoded(**inputs), self._choose_hidden)
            else:
                self.choices = self._choose(self._forward(**inputs, logits_to_keep=nodes).logits[0])
        self._tree_base = base
        return self.choices

    def accept_path(self, path: Sequence[int]) -> None:
        """Keep the branch of the last ``verify_tree`` through ``path`` (nodes after the root, ascending)."""
        import torch

        base = self._tree_base
        with torch.inference_mode():
            self.cache.keep(base + 1, [base + node for node in path])
        last = path[-1] if path else 0
        self.pending = self.choices[last]
        if self._hidden is not None:
            self.last_hidden = self._hidden[last]

    def cost(self, k: int) -> float:
        if self._cost is None:
            self._cost = self._load_or_calibrate()
        return self._cost(k)

    # -- helpers -----------------------------------------------------------------------------
    def _new_cache(self):
        """A cache that rolls back by moving a length where the model allows it, else transformers' own."""
        from transformers import DynamicCache

        from fastapply.kvcache import RollbackCache

        return RollbackCache(self.model.config) if self.verifies_trees else DynamicCache(config=self.model.config)

    def _cached(self) -> dict:
        """The keywords of a forward pass that reads and extends ``self.cache``."""
        return {self._cache_keyword: self.cache, "use_cache": True}

    def _decoded(self, **inputs):
        """The decoder's final hidden states [S, H] of one pass, the output layer not run; kept for
        ``last_hidden`` when tracked."""
        hidden = self._body(**inputs).last_hidden_state[0]
        if self._decoder is not None:
            self._hidden = hidden
        return hidden

    def _choose_hidden(self, hidden) -> list[int]:
        """The model's token at each position of the decoder's output ``hidden`` [S, H]."""
        if self._screens():
            return self._screen(hidden)
        if self._screen is False and self._head_apart:
            from fastapply.screen import read_in_float32

            read_in_float32(self._head.weight, len(hidden))
        return self._choose(self._head(hidden))

    def _screens(self) -> bool:
        """Whether a verify finds its choices through the output layer's int8 screen (``screen.py``):
        greedy, a large float32 output layer whose logits are the model's, on a CPU where the screen
        measured faster, once this process has read enough positions in float32 to pay for building it.
        Known from the first prefill on, for the whole request."""
        if self._screen is None and self._head_apart is not None:
            import torch

            from fastapply.screen import ready, worth_screening

            head = self._head  # exactly a Linear: a wrapped one (an adapter's) may add to its weight
            screen = (ready(head.weight, self._sample) if self._head_apart and self.screen_logits
                      and self.temperature <= 0 and type(head) is torch.nn.Linear and head.bias is None
                      and worth_screening(head.weight) else None)
            self._screen = screen if screen is not None and screen.faster else False
            self._sample = None
        return bool(self._screen)

    def _choose(self, logits) -> list[int]:
        """The model's token at each position of ``logits`` [S, V]: argmax, or a sample at the temperature."""
        import torch

        if self.temperature <= 0:
            return logits.argmax(dim=-1).tolist()
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1).tolist()

    def _load_or_calibrate(self) -> CostModel:
        """The stored verify costs, timed here where none are stored, or where they were timed beside other
        work and this request's prefill had the CPU to itself; the timing with the larger share is kept."""
        key = cost_key(self.model_key, self.device, next(self.model.parameters()).dtype, self._screens())
        stored = stored_costs(key)
        alone = self._cpu_share is not None and self._cpu_share >= SHARED_BELOW
        if stored is not None and (stored.cpu_share >= SHARED_BELOW or not alone):
            return stored
        watch = CpuShare(self.device)
        points = self._calibrate()
        share = watch.share()
        model = CostModel.monotone(points, 1.0 if share is None else share)  # timed in a blink: a toy model
        log.info("measured verify costs (draft tokens: seconds): %s; share of the CPU %.2f",
                 ", ".join(f"{k}: {seconds:.4f}" for k, seconds in model.points), model.cpu_share)
        if stored is not None and stored.cpu_share >= model.cpu_share:
            return stored
        store_costs(key, model)
        return model

    def _calibrate(self, sweeps: int = 3) -> list[tuple[int, float]]:
        """The fastest of ``sweeps`` timed verifies of each of ``CALIBRATION_SIZES``, after one untimed sweep
        that warms up. Each sweep times every size once, so a size's timings lie seconds apart: a busy
        moment of the machine slows one of them, not all (timed back to back, the four verifies of a
        short draft fit in a tenth of a second, and one slow moment once stored a third too dear)."""
        if self.cache is None:
            raise FastapplyError("cost() needs a prefilled target")
        best = dict.fromkeys(CALIBRATION_SIZES, float("inf"))
        for sweep in range(sweeps + 1):
            for k in CALIBRATION_SIZES:
                seconds = self._measure(k)
                if sweep:
                    best[k] = min(best[k], seconds)
        return list(best.items())

    def _measure(self, k: int) -> float:
        """Seconds of one verify of ``k`` draft tokens on the live cache, then rolled back. The draft is the
        prompt's own tail, repeated where short: text the model reads as text (one token repeated leaves
        its choices near ties that the output layer's screen settles in float32, dearer than a real draft)."""
        draft = [self._text[i % len(self._text)] for i in range(k)]
        saved_choices, saved_pending = self.choices, self.pending
        synchronize(self.device)
        start = time.perf_counter()
        choices = self.verify(draft)
        if isinstance(choices, Choices):
            choices.expect(k + 1)  # a draft the model keeps is read whole, as the decode loop expects it to be
        choices[:k + 1]  # every position's logits, in order: what a draft the model keeps costs
        synchronize(self.device)
        seconds = time.perf_counter() - start
        self.cache.crop(-(k + 1))
        self.choices, self.pending = saved_choices, saved_pending
        return seconds
