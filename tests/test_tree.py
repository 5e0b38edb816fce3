"""Tree verification and the cache that rolls back by a length: known answers for the tree's shape and
attention rule, the model's choice at every node equal to plain decoding after that node's branch, and
decoding with trees token for token what greedy decoding gives."""

import pytest
import torch
from transformers import DynamicCache

from fastapply.decode import speculative_generate
from fastapply.kvcache import RollbackCache, RollbackLayer
from fastapply.loading import cache_keyword
from fastapply.replay import ReplayTarget
from fastapply.target import HFTarget
from fastapply.tree import DraftTree
from finetune.scratch import new_llama
from tests.test_decode import FlatCostTarget

PROMPT = [5, 17, 3, 99, 42, 8, 250, 11]


@pytest.fixture(scope="module")
def model():
    return new_llama(300, "tiny", seed=3).eval()


def greedy(model, ids, n):
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=n, do_sample=False, eos_token_id=None, pad_token_id=0)
    return out[0, len(ids):].tolist()


def next_token(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0, -1].argmax().item()


# -- the tree's shape -----------------------------------------------------------------------------

def test_chains_merge_into_a_trie_parents_first():
    tree = DraftTree.from_chains([[5, 6, 7], [5, 8], [9]])
    assert tree.tokens == (-1, 5, 6, 7, 8, 9)
    assert tree.parents == (-1, 0, 1, 2, 1, 0)
    assert tree.depths == (0, 1, 2, 3, 2, 1)


def test_each_node_sees_its_ancestors_and_itself_only():
    visible = DraftTree.from_chains([[5, 6, 7], [5, 8], [9]]).visibility()
    seen = [[j for j, yes in enumerate(row) if yes] for row in visible]
    assert seen == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 4], [0, 5]]


def test_the_longest_agreeing_branch_is_accepted():
    tree = DraftTree.from_chains([[5, 6, 7], [5, 8], [9]])
    # choices after each node: root -> 5, node 1 -> 8 (not 6), node 4 -> 2 (nothing below it)
    assert tree.accepted([5, 8, 0, 0, 2, 0]) == [1, 4]
    assert tree.accepted([9, 0, 0, 0, 0, 1]) == [5]
    assert tree.accepted([4, 0, 0, 0, 0, 0]) == []


def test_the_node_budget_cuts_later_chains():
    tree = DraftTree.from_chains([[1, 2, 3], [4, 5, 6]], max_nodes=4)
    assert tree.tokens == (-1, 1, 2, 3, 4)


# -- the cache ------------------------------------------------------------------------------------

def test_rollback_cache_gives_the_same_logits_as_dynamic_cache(model):
    def run(cache):
        logits = []
        with torch.no_grad():
            for chunk, crop in (([*PROMPT] * 40, 0), ([1, 2, 3, 4, 5], -3), ([7, 8], 0), (list(range(300)), -100)):
                logits.append(model(input_ids=torch.tensor([chunk]), **{cache_keyword(model): cache},
                                    use_cache=True).logits)
                cache.crop(crop)
        return logits, cache.get_seq_length()

    dynamic, rollback = run(DynamicCache(config=model.config)), run(RollbackCache(model.config))
    assert rollback[1] == dynamic[1] == 320 + 2 + 2 + 200
    for a, b in zip(dynamic[0], rollback[0]):
        assert torch.equal(a, b)


def test_keep_moves_the_chosen_positions_after_the_prefix():
    layer = RollbackLayer()
    keys = torch.arange(8.0).view(1, 1, 8, 1)
    layer.update(keys, -keys)
    layer.keep(3, [5, 7])
    assert layer.get_seq_length() == 5
    assert layer.keys.flatten().tolist() == [0, 1, 2, 5, 7]
    assert layer.values.flatten().tolist() == [0, -1, -2, -5, -7]


# -- the target -----------------------------------------------------------------------------------

def test_the_choice_at_every_node_is_greedy_after_its_branch(model):
    reference = greedy(model, PROMPT, 6)
    target = HFTarget(model)
    assert target.verifies_trees
    assert target.prefill(PROMPT) == reference[0]
    tree = DraftTree.from_chains([[reference[1], reference[2], 7], [reference[1], 3], [9, 9]])
    choices = target.verify_tree(tree)
    for node in range(len(tree.tokens)):
        branch = [tree.tokens[a] for a in tree.ancestors(node)[1:]]
        assert choices[node] == next_token(model, [*PROMPT, reference[0], *branch]), node
    path = tree.accepted(choices)
    assert [tree.tokens[node] for node in path] == reference[1:3]
    target.accept_path(path)
    assert target.pending == reference[3]
    assert target.cache.get_seq_length() == len(PROMPT) + 3
    assert target.verify([reference[4]]) == reference[4:6]  # the kept branch is the cache plain decoding has


def test_a_tree_screened_in_int8_chooses_what_float32_does(model, monkeypatch):
    """The tree's choices read the output layer through ``screen.py`` where a verify's do (here at any
    size, the screen said to be faster), and equal the float32 layer's at every node; the accepted
    branch's hidden state is kept."""
    from fastapply import screen

    monkeypatch.setattr(screen, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(screen, "PAYS_AFTER", 0)
    monkeypatch.setattr(screen.ScreenedArgmax, "faster", property(lambda self: True))
    reference = greedy(model, PROMPT, 6)
    tree = DraftTree.from_chains([[reference[1], reference[2], 7], [reference[1], 3], [9, 9], [9, 8, 7]])
    screened = HFTarget(model, keep_hidden=True)
    plain = HFTarget(model, keep_hidden=True, screen_logits=False)
    for target in (screened, plain):
        target.prefill(PROMPT)
    choices = screened.verify_tree(tree)
    assert choices == plain.verify_tree(tree)
    assert isinstance(screened._screen, screen.ScreenedArgmax) and plain._screen is False
    path = tree.accepted(choices)
    assert [tree.tokens[node] for node in path] == reference[1:3]
    for target in (screened, plain):
        target.accept_path(path)
    assert screened.pending == plain.pending == reference[3]
    assert torch.equal(screened.last_hidden, plain.last_hidden)


class Alternatives:
    """A drafter whose draft is wrong and whose second candidate is the reference: only a tree finds it."""

    source = "test"

    def __init__(self, reference):
        self.reference = reference

    def propose(self, out, k):
        return self.candidates(out, k)[0]

    def candidates(self, out, k):
        right = self.reference[len(out):len(out) + 4]
        return [[(token + 1) % 300 for token in right], right]

    def update(self, out, n_accepted):
        pass


def test_decoding_with_trees_equals_greedy_and_takes_the_right_branch(model):
    reference = greedy(model, PROMPT, 40)
    # a flat cost: the tree always pays, whatever this machine's timing of the tiny model says
    tokens, stats = speculative_generate(FlatCostTarget(model), Alternatives(reference), PROMPT, 40)
    assert tokens == reference
    assert max(stats.accepted) >= 2  # a branch beside the wrong draft was accepted


def test_without_trees_the_same_drafter_gets_one_token_a_pass(model):
    reference = greedy(model, PROMPT, 20)
    tokens, stats = speculative_generate(FlatCostTarget(model), Alternatives(reference), PROMPT, 20, trees=False)
    assert tokens == reference
    assert max(stats.accepted) == 0


def test_replayed_trees_need_fewer_passes():
    reference = list(range(10, 60))
    single = speculative_generate(ReplayTarget(reference, 0), Alternatives(reference), [1], 60, {0}, trees=False)
    tree = speculative_generate(ReplayTarget(reference, 0), Alternatives(reference), [1], 60, {0})
    assert single[0] == tree[0] == [*reference, 0]
    assert tree[1].passes < single[1].passes


def test_a_trees_choices_are_computed_along_the_branch_read_only(model):
    """A long draft rejected at its first token and a short alternative the model takes: reading the
    accepted branch computes the output layer for the root's chunk and the alternative's, not for the
    draft nodes between; the choices are those of the whole tree."""
    from fastapply.choices import LOGIT_CHUNK

    reference = greedy(model, PROMPT, 4)
    draft = [(reference[1] + 1) % 300, *range(100, 180)]
    tree = DraftTree.from_chains([draft, [reference[1], reference[2]]])
    target = HFTarget(model)
    target.prefill(PROMPT)
    choices = target.verify_tree(tree)
    path = tree.accepted(choices)
    assert [tree.tokens[node] for node in path] == reference[1:3]
    assert choices.computed <= len(tree.tokens) - 2 * LOGIT_CHUNK  # chunk 1, nodes 16-47, never read
    full = HFTarget(model)
    full.prefill(PROMPT)
    assert list(full.verify_tree(tree)) == list(choices)
