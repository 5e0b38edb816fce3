"""The int8 screen of the output layer chooses exactly float32's greedy tokens."""

import pytest
import torch

from fastapply.screen import CANDIDATES, EXACT, ScreenedArgmax, screen_for


def float32_argmax(hidden, weight):
    return torch.nn.functional.linear(hidden, weight).argmax(dim=-1).tolist()


def pointing(weight, count, generator, noise=1.0):
    """Hidden states pointing at random rows of ``weight``, as a model copying code has."""
    rows = weight[torch.randint(0, len(weight), (count,), generator=generator)]
    return rows * 3 + torch.randn(count, weight.shape[1], generator=generator) * noise


def test_confident_positions_are_settled_in_int8_the_rest_in_float32():
    """Positions pointing at a token are settled by the bound; random ones, whose top logits crowd
    together, often go to float32: both choose float32's tokens."""
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(5000, 64, generator=generator)
    confident = pointing(weight, 300, generator)
    crowded = torch.randn(100, 64, generator=generator)
    for hidden, most in ((confident, "int8"), (crowded, "float32")):
        screen = ScreenedArgmax(weight, hidden)
        assert screen(hidden) == float32_argmax(hidden, weight)
        assert screen.trusted
        assert (screen.exact_rows < len(hidden) / 20) if most == "int8" else (screen.exact_rows > len(hidden) / 10)


def test_the_channels_kept_in_float32_are_the_samples_largest():
    """A hidden state's few outsized channels would set its int8 scale: the sample names them, and
    keeping them exact settles positions the same screen without them cannot."""
    generator = torch.Generator().manual_seed(3)
    weight = torch.randn(4000, 96, generator=generator)
    loud = torch.arange(EXACT) * 5 + 3
    weight[:, loud] = 0.0  # they move no logit here, only the int8 scale of a screen that quantizes them
    hidden = pointing(weight, 200, generator)
    hidden[:, loud] = 500.0 + torch.rand(200, EXACT, generator=generator)
    informed, blind = ScreenedArgmax(weight, hidden[:50]), ScreenedArgmax(weight)
    assert sorted(informed.channels.tolist()) == loud.tolist()
    assert informed(hidden) == blind(hidden) == float32_argmax(hidden, weight)
    assert informed.exact_rows < blind.exact_rows


def test_ties_and_near_ties_go_to_float32_and_the_lowest_id_wins():
    """Rows 10 and 20 are the same vector, so every position ties there; row 30 is that vector nudged by
    less than int8 can tell: float32 alone decides between them."""
    generator = torch.Generator().manual_seed(1)
    weight = torch.randn(100, 32, generator=generator) * 0.1
    direction = torch.randn(32, generator=generator)
    weight[10] = weight[20] = direction
    weight[30] = direction * (1 + 2.0 ** -12)
    hidden = direction.repeat(6, 1) * torch.tensor([[1.0], [2.0], [-0.5], [3.0], [0.25], [1.5]])
    screen = ScreenedArgmax(weight, hidden)
    assert screen(hidden) == float32_argmax(hidden, weight)
    assert screen(hidden)[0] == 30 and screen.exact_rows >= 2


def test_more_near_winners_than_it_checks_one_by_one_take_the_whole_row():
    """A position where more than ``CANDIDATES`` tokens are within the bound of the top one: the whole
    float32 row decides."""
    vocab = 3 * CANDIDATES
    weight = torch.ones(vocab, 16) + torch.arange(vocab)[:, None] * 1e-4
    hidden = torch.ones(2, 16)
    screen = ScreenedArgmax(weight, hidden)
    assert screen(hidden) == float32_argmax(hidden, weight) == [vocab - 1] * 2
    assert screen.exact_rows == 2


def test_an_int8_product_outside_the_bound_means_float32_throughout():
    """Where the bound does not hold on the first rows checked (another machine's rounding, here a bound
    with its rounding terms left out), nothing is decided in int8."""
    generator = torch.Generator().manual_seed(2)
    weight = torch.randn(300, 32, generator=generator)
    hidden = torch.randn(50, 32, generator=generator)
    screen = ScreenedArgmax(weight, hidden)
    screen.rows = torch.zeros_like(screen.rows)
    assert screen(hidden) == float32_argmax(hidden, weight)
    assert screen.trusted is False


@pytest.mark.parametrize("vocab", [1, 3, 64, 65])
@pytest.mark.parametrize("size", [8, 40])
def test_small_layers_and_every_block_size(vocab, size):
    """Vocabularies of a few tokens, hidden sizes with every channel kept exact (8) or most quantized, and
    position counts that fill no block, one, or more than one."""
    generator = torch.Generator().manual_seed(vocab * size)
    weight = torch.randn(vocab, size, generator=generator)
    for count in (1, 7, 64, 130):
        hidden = torch.randn(count, size, generator=generator)
        assert ScreenedArgmax(weight, hidden)(hidden) == float32_argmax(hidden, weight)


def test_a_screen_is_built_once_per_weight_and_again_when_the_weight_changes():
    generator = torch.Generator().manual_seed(5)
    weight = torch.randn(64, 8, generator=generator)
    first = screen_for(weight)
    assert screen_for(weight) is first
    with torch.no_grad():
        weight.add_(1.0)  # trained in place: the int8 copy would be stale
    second = screen_for(weight)
    hidden = torch.randn(20, 8, generator=generator)
    assert second is not first and second(hidden) == float32_argmax(hidden, weight)
    assert screen_for(torch.randn(64, 8)) is not second
