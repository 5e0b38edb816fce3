"""A draft model: a smaller causal LM of the same tokenizer proposes what comes next, token by token.

``DraftModelDrafter`` runs the draft model greedily on ``prompt + output``, with its own KV cache
(an ``HFTarget`` used as an engine), and proposes up to ``max_tokens`` tokens, stopping early where the
draft's own probability of its next token falls under ``min_confidence``, and after a stop id (the
answer's end: nothing after it is ever verified). It works only when asked to
propose: it then rolls its cache back to what it has in common with the output and feeds the rest in
one pass, so as fastapply's fallback (``fastapply+draft-model``), consulted only where no pointer
source is live, it costs nothing in between.

Why the result is exact under sampling: the speculative-sampling rule accepts a drafted token ``x``
with probability ``min(1, p(x) / q(x))`` and on rejection samples from ``max(0, p - q)`` renormalised.
A greedy draft is a point mass (``q(x) = 1``): accept with probability ``p(x)``, else sample from ``p``
without ``x``. That is what the decode loop does: ``HFTarget`` samples from ``p`` at every verified
position and the draft is kept while it equals the samples. A sample equal to ``x`` happens with
probability ``p(x)``; otherwise the sample is the output, distributed as ``p`` restricted to tokens
other than ``x``. The draft depends only on the output so far, never on the samples it is checked
against. With ``temperature == 0`` the output is greedy decoding's, token for token.

A checkpoint may carry ``draft_vocab.json`` (``finetune/distill.py`` writes it, ``draftvocab.py``):
the tokens its answers use. The draft then scores only those and the prompt's tokens, sparing most of
the output layer, which for a small model with a large vocabulary is most of a step's cost.

This module does not verify, accept or choose the verified length; ``decode.py`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from types import SimpleNamespace

from fastapply.decode import common_prefix
from fastapply.draft import DraftContext, Drafter
from fastapply.draftvocab import ScoredRows, read_draft_vocab, with_prompt
from fastapply.errors import UsageError
from fastapply.target import HFTarget

MAX_TOKENS = 8  # most tokens one proposal drafts: each costs the draft model a forward pass
# The draft stops before a token whose own probability is under this (transformers' assisted generation
# uses the same rule and value): past it, acceptance is unlikely and the next step is wasted work.
MIN_CONFIDENCE = 0.4


class DraftModelDrafter:
    """Greedy proposals of a draft model, its KV cache kept in step with ``prompt_ids + out`` lazily.

    Example: after out = [a, b] it proposed [c, d, e] (its cache holds prompt + [a, b, c, d]); the loop
    accepted c and the target chose x, so out = [a, b, c, x]: the cache is cut back to prompt + [a, b, c],
    x is fed (one forward pass) and the model's next tokens are proposed. The first token is proposed whatever its
    probability (its forward pass is already paid); the later ones only above ``min_confidence``.
    """

    source = "draft-model"
    costly = True  # each proposal runs the draft model: the loop does not ask for drafts it would decline

    def __init__(self, model, prompt_ids: Sequence[int], max_tokens: int = MAX_TOKENS,
                 min_confidence: float = MIN_CONFIDENCE, vocab: Collection[int] | None = None,
                 stop_ids: Collection[int] = ()):
        self.model = model
        self.prompt_ids = list(prompt_ids)
        self.max_tokens = max_tokens
        self.min_confidence = min_confidence
        self.vocab = vocab  # the token ids it may propose; None: all
        self.stop_ids = frozenset(stop_ids)  # a draft ends with the first of these it proposes
        self.engine: DraftEngine | None = None  # built at the first proposal
        self.fed: list[int] = []  # the tokens in the engine's cache: a prefix of prompt + out, then drafts

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        limit = min(k, self.max_tokens)
        if limit <= 0:
            return []
        self._catch_up([*self.prompt_ids, *out])
        draft = [self.engine.pending]
        while len(draft) < limit and draft[-1] not in self.stop_ids:
            self._feed([draft[-1]])
            if self.engine.confidence < self.min_confidence:
                break
            draft.append(self.engine.pending)
        return draft

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        pass  # the cache catches up at the next proposal, if there is one

    def _catch_up(self, tokens: list[int]) -> None:
        """Make the engine's next choice the one after ``tokens``: roll back to the common prefix, feed the rest."""
        if self.engine is None:
            self.engine = DraftEngine(self.model, self.vocab)
            self.engine.prefill(tokens)
            self.fed = list(tokens)
            return
        same = common_prefix(self.fed, tokens)
        if same == len(self.fed) == len(tokens):
            return  # the pending choice already follows ``tokens``
        same = min(same, len(tokens) - 1)  # feed at least the last token: its logits choose the next
        self.engine.rollback(len(self.fed) - same)
        del self.fed[same:]
        self._feed(tokens[same:])

    def _feed(self, ids: list[int]) -> None:
        self.engine.extend(ids)
        self.fed.extend(ids)


class DraftEngine(HFTarget):
    """``HFTarget`` as a draft model's engine (``extend`` and ``rollback`` as it drafts): greedy, with
    the probability of its last choice (``confidence``); given ``vocab``, only those token ids are scored
    (the output layer's rows gathered once)."""

    def __init__(self, model, vocab: Collection[int] | None = None):
        super().__init__(model)
        self.confidence = 1.0
        # The output layer's rows for ``vocab``; None: the whole vocabulary.
        self.rows = ScoredRows(model.get_output_embeddings(), vocab) if vocab is not None else None

    def _forward(self, **kwargs):
        if self.rows is None:
            return super()._forward(**kwargs)
        keep = kwargs.pop("logits_to_keep")
        hidden = self._body(**kwargs).last_hidden_state[:, -keep:]  # [1, keep, H], after the final norm
        return SimpleNamespace(logits=self.rows.logits(hidden))  # [1, keep, N]

    def _choose(self, logits) -> list[int]:
        """Greedy token ids at each position of ``logits`` [S, V or N]; ``confidence`` is the last one's probability."""
        import torch

        top = torch.softmax(logits.float(), dim=-1).max(dim=-1)
        self.confidence = float(top.values[-1])
        return (top.indices if self.rows is None else self.rows.tokens(top.indices)).tolist()


def draft_model_factory(model, vocab: Collection[int] | None = None, max_tokens: int = MAX_TOKENS,
                        min_confidence: float = MIN_CONFIDENCE,
                        stop_ids: Collection[int] = ()) -> Callable[[DraftContext, object], Drafter]:
    """The ``draft-model`` entry of ``draft.make_drafter``'s ``models``: a ``DraftModelDrafter`` per
    request over the loaded draft ``model``; with ``vocab``, it scores those ids and the prompt's; its
    drafts end at the first of ``stop_ids``."""

    def build(context: DraftContext, target: object = None) -> Drafter:  # the target is not needed
        return DraftModelDrafter(model, context.prompt_ids, max_tokens, min_confidence,
                                 with_prompt(vocab, context.prompt_ids), stop_ids)

    return build


def load_draft_model(path: str, model, tokenizer, max_tokens: int = MAX_TOKENS,
                     min_confidence: float = MIN_CONFIDENCE) -> Callable[[DraftContext, object], Drafter]:
    """Load the draft model at ``path`` on ``model``'s device and dtype, check that it shares
    ``tokenizer``, and return its ``draft_model_factory`` (drafts end at ``model``'s stop ids)."""
    from fastapply.loading import load_model, resolve_named, stop_ids_of

    weights = next(model.parameters())
    draft, draft_tokenizer = load_model(path, weights.device.type, str(weights.dtype).removeprefix("torch."))
    check_vocabulary(tokenizer, draft, draft_tokenizer, path)
    vocab = read_draft_vocab(resolve_named(path))
    target_size = model.get_output_embeddings().weight.shape[0]
    if vocab is None and draft.get_output_embeddings().weight.shape[0] > target_size:
        vocab = range(target_size)  # never propose an id the model has no embedding for
    return draft_model_factory(draft, vocab, max_tokens, min_confidence, stop_ids_of(model, tokenizer))


def check_vocabulary(tokenizer, draft, draft_tokenizer, name: str) -> None:
    """``UsageError`` unless the draft model has the model's tokenizer and embeds all of its ids."""
    mine, theirs = tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    if mine != theirs:
        detail = (f"{len(theirs)} tokens, the model's {len(mine)}" if len(mine) != len(theirs)
                  else f"{len(mine)} tokens, not the same ones")
        raise UsageError(f"the draft model {name} has another tokenizer ({detail}); a draft model must "
                         "share the model's tokenizer")
    rows = draft.get_input_embeddings().weight.shape[0]
    if rows < len(tokenizer):
        raise UsageError(f"the draft model {name} embeds {rows} token ids, its tokenizer has {len(tokenizer)}")
