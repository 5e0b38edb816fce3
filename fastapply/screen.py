"""The greedy choices of a float32 output layer, found through a bfloat16 one wherever that is proven
to choose the same token.

A verify must know the model's top token at every position it accepts, and on a CPU the output layer
(hidden 576 x vocabulary 49,152 for fastapply-small) is about a fifth of a pass. Where the CPU has
bfloat16 dot products (AVX512-BF16) the same product in bfloat16 runs about three times faster, but
rounds. ``ScreenedArgmax`` bounds that rounding and only trusts the bfloat16 logits where the bound
leaves one possible winner:

- with ``u = 2**-8`` (bfloat16's unit roundoff) and ``γ`` the float32 accumulation error over the
  hidden size, every bfloat16 logit ``A[j]`` is within ``E[j] = c·|x|·|w_j| + u/(1-u)·|A[j]|`` of the
  float32 logit ``L[j]`` that plain decoding computes, ``c = 2u + u² + 2.1γ`` (inputs rounded to
  bfloat16, products summed in float32, the result rounded to bfloat16; the float32 logit's own
  rounding is the last ``γ``);
- the top bfloat16 token ``t`` is the float32 argmax when ``A[t] - E[t] > A[j] + E[j]`` for every other
  ``j``: checked with each row's own norm for the ``TOP`` highest, and with the largest row norm for
  the rest, which lie below the ``TOP``-th;
- where more than one token stays possible (about 1 position in 100 on fastapply-small), those
  candidates' float32 logits decide, lowest id first on a tie as ``argmax`` does; where even the rest
  cannot be ruled out, the position's whole float32 row does.

So the choices are float32's, token for token. The bound is checked against the float32 layer on the
first positions screened; a machine whose bfloat16 product rounds otherwise gets float32 throughout.
"""

from __future__ import annotations

TOP = 8  # bfloat16 logits per position checked with their own row's norm
MIN_WEIGHTS = 1 << 22  # a smaller output layer is cheap in float32: the screen's own steps cost more
UNIT = 2.0 ** -8  # bfloat16's unit roundoff (8 significant bits, round to nearest)


def worth_screening(weight) -> bool:
    """Whether the screen pays for the float32 output layer ``weight`` [V, H]: a large one, on a CPU that
    multiplies bfloat16 matrices natively (elsewhere bfloat16 is slower than float32)."""
    import torch

    return (weight.dtype == torch.float32 and weight.device.type == "cpu" and weight.numel() >= MIN_WEIGHTS
            and torch.backends.mkldnn.is_available() and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()))


_SCREENS: dict[int, tuple] = {}  # id(weight) -> (weakref to it, its version then, its screen)


def screen_for(weight) -> "ScreenedArgmax":
    """The screen of ``weight``, built once while the weight lives unchanged: its bfloat16 copy and row
    norms cost about a tenth of a second, which every request of a served model would pay again."""
    import weakref

    key = id(weight)
    cached = _SCREENS.get(key)
    if cached is not None and cached[0]() is weight and cached[1] == weight._version:
        return cached[2]
    for stale in [k for k, (ref, _, _) in _SCREENS.items() if ref() is None]:
        del _SCREENS[stale]
    screen = ScreenedArgmax(weight)
    _SCREENS[key] = (weakref.ref(weight), weight._version, screen)
    return screen


class ScreenedArgmax:
    """``argmax(hidden @ weight.T)`` per row, as float32 computes it, mostly in bfloat16.

    >>> import torch
    >>> weight = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # rows 0 and 2 tie: argmax takes 0
    >>> ScreenedArgmax(weight)(torch.tensor([[2.0, 1.0], [0.5, 3.0]]))
    [0, 1]
    """

    def __init__(self, weight):
        import torch

        weight = weight.detach()  # a model's parameter: nothing here is trained
        self.weight = weight  # [V, H] float32
        self.low = weight.to(torch.bfloat16)
        self.norms = weight.norm(dim=-1)  # [V]
        self.max_norm = float(self.norms.max())
        size = weight.shape[1]
        gamma = size * 2.0 ** -24 / (1 - size * 2.0 ** -24)
        self.scale = (2 * UNIT + UNIT ** 2 + 2.1 * gamma) * 1.001  # the last factor: the norms' own rounding
        self.trusted: bool | None = None  # whether the bound held where checked; None: not checked yet
        self.exact_rows = 0  # positions decided by float32 logits (some or all): for tests and benchmarks

    def __call__(self, hidden) -> list[int]:
        """The float32 argmax of each row of ``hidden`` [N, H] times the weight."""
        import torch

        with torch.inference_mode():
            approx = torch.nn.functional.linear(hidden.to(torch.bfloat16), self.low)  # [N, V]
            if self.trusted is None:
                self.trusted = self._bound_holds(hidden, approx)
            if not self.trusted:
                return self._exact(hidden).tolist()
            values, ids = approx.topk(min(TOP, approx.shape[1]), dim=-1)  # [N, K], highest first
            values = values.float()
            size = hidden.norm(dim=-1, keepdim=True)  # [N, 1]
            slack = self.scale * size * self.norms[ids] + UNIT / (1 - UNIT) * values.abs()  # [N, K]
            floor = values[:, :1] - slack[:, :1]  # the top token's float32 logit is at least this
            possible = values + slack >= floor  # [N, K]: the top token and any that may beat it
            # a token outside the TOP has a bfloat16 logit at most the TOP-th (or below 0)
            rest = values[:, -1:].clamp(min=0) * (1 + UNIT / (1 - UNIT)) + self.scale * size * self.max_norm
            settled = rest < floor if approx.shape[1] > TOP else torch.ones_like(floor, dtype=torch.bool)
            choices = ids[:, 0].tolist()
            unsure = (possible.sum(dim=-1) > 1) | ~settled[:, 0]
            for row in unsure.nonzero().flatten().tolist():
                self.exact_rows += 1
                if settled[row, 0]:
                    candidates = ids[row][possible[row]].sort().values  # lowest id first, as argmax breaks ties
                    logits = torch.nn.functional.linear(hidden[row], self.weight[candidates])
                    choices[row] = int(candidates[logits.argmax()])
                else:
                    choices[row] = int(self._exact(hidden[row:row + 1])[0])
            return choices

    def _exact(self, hidden):
        import torch

        return torch.nn.functional.linear(hidden, self.weight).argmax(dim=-1)

    def _bound_holds(self, hidden, approx) -> bool:
        """Whether every bfloat16 logit ``approx`` of ``hidden`` lies within the bound of its float32 one."""
        import torch

        approx = approx.float()
        exact = torch.nn.functional.linear(hidden, self.weight)
        slack = self.scale * hidden.norm(dim=-1, keepdim=True) * self.norms + UNIT / (1 - UNIT) * approx.abs()
        return bool(((approx - exact).abs() <= slack).all())
