"""Medusa heads: extra decoding heads that read the model's last hidden state and guess the tokens after
the one it has just chosen, and the drafter that proposes their guesses.

Head i (1..n) is a residual block ``h + SiLU(W_i h + b_i)`` followed by the base model's own ``lm_head``
(shared, frozen, never saved). ``W_i`` and ``b_i`` start at zero, so an untrained head repeats the base's
own guess. Applied to the hidden state whose logits chose the output's last token, head i guesses the
token i positions after that one. ``MedusaDrafter`` proposes the heads' argmax chain and offers, for tree
verification, the chains of the heads' top tokens most likely together within a node budget. Heads saved
with a draft vocabulary (``draftvocab.py``; the trainer writes one) score only its tokens and the
prompt's: the shared ``lm_head`` product for every head would otherwise cost about a pass of the model.
This module does not train the heads (``finetune/medusa.py``) or verify drafts (``decode.py``,
``target.py``); it imports torch, so import it only when heads are asked for.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from fastapply.draft import DraftContext
from fastapply.draftvocab import (
    ScoredRows,
    read_draft_vocab,
    with_prompt,
    write_draft_vocab,
)
from fastapply.errors import FastapplyError
from fastapply.loading import output_head

WEIGHTS_FILE = "medusa_heads.safetensors"
CONFIG_FILE = "medusa_config.json"
TOP_K = 4  # options per head that the candidate tree may branch on
TREE_NODES = 16  # draft tokens the candidate chains hold together: each one is verified, so each one costs


@dataclass(frozen=True)
class MedusaConfig:
    n_heads: int
    hidden_size: int  # the base model's hidden size (the heads' input and output)
    vocab_size: int  # the base model's lm_head rows
    base_model: str = ""  # what the heads were trained on (for people; loading checks only the sizes)
    metrics: dict = field(default_factory=dict)  # from training: steps, held-out accuracy per head, ...


class MedusaHeads(torch.nn.Module):
    """``n_heads`` residual blocks sharing the base's ``lm_head``: ``heads(hidden [..., H]) -> logits [n, ..., V]``."""

    def __init__(self, config: MedusaConfig, lm_head: torch.nn.Linear):
        super().__init__()
        self.config = config
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(config.hidden_size, config.hidden_size)
                                          for _ in range(config.n_heads))
        for block in self.blocks:
            torch.nn.init.zeros_(block.weight)
            torch.nn.init.zeros_(block.bias)
        # The base's own lm_head, bypassing Module registration: not a parameter here, not saved or moved.
        object.__setattr__(self, "lm_head", lm_head)
        self.vocab: list[int] | None = None  # the draft vocabulary saved with the heads; None: score every id

    @classmethod
    def new(cls, model, n_heads: int, base_model: str = "") -> MedusaHeads:
        """Untrained heads for ``model`` (float32, on its device)."""
        if n_heads < 1:
            raise FastapplyError(f"Medusa needs at least one head, not {n_heads}")
        lm_head = output_head(model)
        config = MedusaConfig(n_heads, lm_head.in_features, lm_head.out_features, base_model)
        return cls(config, lm_head).to(lm_head.weight.device)

    @classmethod
    def load(cls, directory: str | Path, model) -> MedusaHeads:
        """Heads saved by ``save``, on ``model``'s device and in its dtype, ready to draft for it."""
        from safetensors.torch import load_file

        directory = Path(directory)
        try:
            values = json.loads((directory / CONFIG_FILE).read_text())
        except OSError:
            raise FastapplyError(f"no Medusa heads in {directory}: {CONFIG_FILE} is missing") from None
        try:
            config = MedusaConfig(**values)
        except TypeError as exc:
            raise FastapplyError(f"{directory / CONFIG_FILE} is not a Medusa heads config: {exc}") from None
        lm_head = output_head(model)
        if (config.hidden_size, config.vocab_size) != (lm_head.in_features, lm_head.out_features):
            raise FastapplyError(
                f"the Medusa heads in {directory} are for hidden size {config.hidden_size} and a vocabulary of "
                f"{config.vocab_size} ({config.base_model or 'base unknown'}); this model has hidden size "
                f"{lm_head.in_features} and a vocabulary of {lm_head.out_features}")
        heads = cls(config, lm_head)
        try:
            heads.load_state_dict(load_file(directory / WEIGHTS_FILE))
        except OSError:
            raise FastapplyError(f"no Medusa heads in {directory}: {WEIGHTS_FILE} is missing") from None
        heads.vocab = read_draft_vocab(directory)
        return heads.to(device=lm_head.weight.device, dtype=lm_head.weight.dtype).eval()

    def save(self, directory: str | Path, metrics: dict | None = None) -> Path:
        """Write the heads (float32), their config with ``metrics`` if given, and their draft vocabulary
        if they have one, to ``directory``."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        save_file({name: tensor.detach().float().cpu().contiguous() for name, tensor in self.state_dict().items()},
                  directory / WEIGHTS_FILE)
        config = asdict(self.config) | ({"metrics": metrics} if metrics is not None else {})
        (directory / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n")
        if self.vocab:
            write_draft_vocab(directory, self.vocab)
        return directory

    def forward(self, hidden: torch.Tensor, rows: ScoredRows | None = None) -> torch.Tensor:
        """Logits [n, ..., V] of every head at ``hidden`` [..., H]; over ``rows``' tokens [n, ..., N] if given."""
        hidden = hidden.to(self.blocks[0].weight.dtype)
        states = torch.stack([hidden + torch.nn.functional.silu(block(hidden)) for block in self.blocks])  # [n, ..., H]
        if rows is not None:
            return rows.logits(states)
        return self.lm_head(states.to(self.lm_head.weight.dtype))




class MedusaDrafter:
    """Drafts from ``heads`` applied to ``target.last_hidden`` (an ``HFTarget`` built with ``keep_hidden``).

    ``propose`` gives each head's argmax in turn; ``candidates`` gives alternative chains from the heads'
    ``top_k`` tokens, at most ``tree_nodes`` tokens in all (``best_chains``), the argmax chain first.
    Given ``vocab``, the heads score only those token ids.
    """

    source = "medusa"

    def __init__(self, heads: MedusaHeads, target, top_k: int = TOP_K, tree_nodes: int = TREE_NODES,
                 vocab: Collection[int] | None = None):
        self.heads = heads
        self.target = target
        self.top_k = top_k
        self.tree_nodes = tree_nodes
        self.rows = ScoredRows(heads.lm_head, vocab) if vocab is not None else None
        self._hidden = None  # the hidden state the guesses below were made from
        self._guesses: tuple[list[list[float]], list[list[int]]] = ([], [])

    def propose(self, out: Sequence[int], k: int) -> list[int]:
        _, tokens = self._top()
        return [options[0] for options in tokens[:k]]

    def candidates(self, out: Sequence[int], k: int) -> list[list[int]]:
        """Chains of at most ``k`` tokens after ``out``, best first; the first is ``propose``'s."""
        probs, tokens = self._top()
        return best_chains(probs, tokens, min(k, len(tokens)), self.tree_nodes)

    def update(self, out: Sequence[int], n_accepted: int) -> None:
        pass

    def _top(self) -> tuple[list[list[float]], list[list[int]]]:
        """(probabilities, tokens) of each head's ``top_k`` guesses, [n][top_k], best first."""
        hidden = getattr(self.target, "last_hidden", None)
        if hidden is None:
            raise RuntimeError("MedusaDrafter reads target.last_hidden: build the HFTarget with keep_hidden=True")
        if hidden is not self._hidden:
            with torch.inference_mode():
                probs = torch.softmax(self.heads(hidden, self.rows).float(), dim=-1)  # [n, V or N]
                top = probs.topk(min(self.top_k, probs.shape[-1]), dim=-1)
                tokens = top.indices if self.rows is None else self.rows.tokens(top.indices)
            self._hidden, self._guesses = hidden, (top.values.tolist(), tokens.tolist())
        return self._guesses


def best_chains(probs: Sequence[Sequence[float]], tokens: Sequence[Sequence[int]], depth: int,
                budget: int) -> list[list[int]]:
    """The root-to-leaf chains of a token tree built from per-level options, best first.

    Level d offers ``tokens[d][j]`` with probability ``probs[d][j]`` (best first); a node's probability is
    the product along its chain (the heads guess independently). The argmax chain, ``depth`` levels deep,
    is always in the tree and first; the rest of the ``budget`` (nodes in all) goes to the most probable
    nodes, best first, which keeps the tree closed under prefixes. Each leaf is one chain.

    >>> best_chains([[0.6, 0.3], [0.9, 0.1]], [[5, 6], [7, 8]], depth=2, budget=3)
    [[5, 7], [6]]
    >>> best_chains([[0.6, 0.3], [0.9, 0.1]], [[5, 6], [7, 8]], depth=2, budget=4)
    [[5, 7], [6, 7]]
    """
    if depth <= 0:
        return [[]]

    def children(path: tuple[int, ...], p: float):
        if len(path) < depth:
            for j, q in enumerate(probs[len(path)]):
                yield -p * q, path + (j,)

    argmax = tuple([0] * depth)
    chosen = {argmax[:d]: _chain_probability(probs, argmax[:d]) for d in range(1, depth + 1)}
    frontier = [item for path, p in [((), 1.0), *chosen.items()] for item in children(path, p)
                if item[1] not in chosen]
    heapq.heapify(frontier)
    while frontier and len(chosen) < budget:
        negative, path = heapq.heappop(frontier)
        chosen[path] = -negative
        for item in children(path, -negative):
            heapq.heappush(frontier, item)
    parents = {path[:-1] for path in chosen}
    leaves = sorted((path for path in chosen if path not in parents), key=lambda path: (path != argmax, -chosen[path]))
    return [[tokens[d][j] for d, j in enumerate(path)] for path in leaves]


def _chain_probability(probs: Sequence[Sequence[float]], path: tuple[int, ...]) -> float:
    p = 1.0
    for d, j in enumerate(path):
        p *= probs[d][j]
    return p


def medusa_factory(heads: MedusaHeads, **options) -> Callable[[DraftContext, object], MedusaDrafter]:
    """The ``models["medusa"]`` entry of ``draft.make_drafter``: a ``MedusaDrafter`` on the request's target
    (an ``HFTarget``, told to keep its hidden states), scoring the heads' draft vocabulary and the prompt's
    ids if the heads have one; ``options`` go to ``MedusaDrafter``."""

    def build(context: DraftContext, target) -> MedusaDrafter:
        target.track_hidden()
        return MedusaDrafter(heads, target, vocab=with_prompt(heads.vocab or None, context.prompt_ids), **options)

    return build
