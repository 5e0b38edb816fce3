"""The bfloat16 screen of the output layer chooses exactly float32's greedy tokens."""

import pytest
import torch

from fastapply.screen import TOP, ScreenedArgmax


def float32_argmax(hidden, weight):
    return torch.nn.functional.linear(hidden, weight).argmax(dim=-1).tolist()


def test_confident_positions_are_settled_in_bfloat16_the_rest_in_float32():
    """Positions pointing at a token (as a model copying code does) are settled by the bound; random ones,
    whose top logits crowd together, often go to float32: both choose float32's tokens."""
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(5000, 64, generator=generator)
    confident = weight[torch.randint(0, 5000, (300,), generator=generator)] + torch.randn(300, 64, generator=generator)
    crowded = torch.randn(100, 64, generator=generator)
    for hidden, most in ((confident, "bfloat16"), (crowded, "float32")):
        screen = ScreenedArgmax(weight)
        assert screen(hidden) == float32_argmax(hidden, weight)
        assert screen.trusted
        assert (screen.exact_rows < len(hidden) / 10) if most == "bfloat16" else (screen.exact_rows > len(hidden) / 4)


def test_ties_and_near_ties_go_to_float32_and_the_lowest_id_wins():
    """Rows 10 and 20 are the same vector, so every position ties there; row 30 is that vector nudged by
    less than bfloat16 can tell: float32 alone decides between them."""
    generator = torch.Generator().manual_seed(1)
    weight = torch.randn(100, 32, generator=generator) * 0.1
    direction = torch.randn(32, generator=generator)
    weight[10] = weight[20] = direction
    weight[30] = direction * (1 + 2.0 ** -12)
    hidden = direction.repeat(6, 1) * torch.tensor([[1.0], [2.0], [-0.5], [3.0], [0.25], [1.5]])
    screen = ScreenedArgmax(weight)
    assert screen(hidden) == float32_argmax(hidden, weight)
    assert screen(hidden)[0] == 30 and screen.exact_rows >= 2


def test_more_near_winners_than_it_checks_one_by_one_take_the_whole_row():
    """A position where more than ``TOP`` tokens are within the bound of the top one: the tokens outside
    the top cannot be ruled out, so the whole float32 row decides."""
    weight = torch.ones(3 * TOP, 16) + torch.arange(3 * TOP)[:, None] * 1e-4
    hidden = torch.ones(2, 16)
    screen = ScreenedArgmax(weight)
    assert screen(hidden) == float32_argmax(hidden, weight) == [3 * TOP - 1] * 2
    assert screen.exact_rows == 2


def test_a_bfloat16_product_outside_the_bound_means_float32_throughout():
    """Where the bound does not hold on the first rows checked (another machine's rounding, here a bound
    made too tight), nothing is decided in bfloat16."""
    generator = torch.Generator().manual_seed(2)
    weight = torch.randn(300, 32, generator=generator)
    hidden = torch.randn(50, 32, generator=generator)
    screen = ScreenedArgmax(weight)
    screen.scale = 0.0
    assert screen(hidden) == float32_argmax(hidden, weight)
    assert screen.trusted is False


@pytest.mark.parametrize("vocab", [3, TOP, TOP + 1])
def test_a_vocabulary_no_larger_than_the_top_checked(vocab):
    generator = torch.Generator().manual_seed(vocab)
    weight = torch.randn(vocab, 8, generator=generator)
    hidden = torch.randn(20, 8, generator=generator)
    assert ScreenedArgmax(weight)(hidden) == float32_argmax(hidden, weight)


def test_a_screen_is_built_once_per_weight_and_again_when_the_weight_changes():
    from fastapply.screen import screen_for

    weight = torch.randn(64, 8)
    first = screen_for(weight)
    assert screen_for(weight) is first
    with torch.no_grad():
        weight.add_(1.0)  # trained in place: the bfloat16 copy would be stale
    second = screen_for(weight)
    assert second is not first and torch.equal(second.low, weight.to(torch.bfloat16))
    assert screen_for(torch.randn(64, 8)) is not second
