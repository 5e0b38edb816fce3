"""The greedy choices of a float32 output layer, found through an int8 product wherever that is proven to
choose the same token.

A verify must know the model's top token at every position it accepts, and on a CPU the output layer
(hidden 576 x vocabulary 49,152 for fastapply-small) is about a fifth of a pass: a cost the limit (one
prefill, one position's logits) never pays. Where the CPU multiplies int8 matrices fast (VNNI), the same
product in int8 runs two to three times faster, but rounds. ``ScreenedArgmax`` bounds that rounding and
only trusts the int8 logits where the bound leaves one possible winner:

- a model's hidden states carry a few channels ten times the others, which would swamp an int8 scale:
  the ``EXACT`` channels largest in a sample of them (the first prefill's) are kept in float32, ``h_O``;
  each weight row ``j`` is quantized over the other channels with its own scale, ``w_jR = s_j·q_j + e_j``,
  and at each position the rest of the hidden state with one scale, ``r = t·p + d``;
- so the true logit is at most ``U[j] = s_j·t·(q_j·p) + w_jO·h_O + |s_j q_j|·|d| + |e_j|·|r| + γ|w_jO|·|h_O|
  + γ_H|w_j|·|h|`` (Cauchy-Schwarz on the rounding terms; the last two cover float32's own rounding of
  the exact channels and of the logit the model computes), and every term is a product of a row's
  constant and a position's: one int8 product and one thin float32 product give every ``U[j]``;
- the top ``a`` of ``U`` is the float32 argmax when its own float32 logit, less its rounding, exceeds
  every other ``U[j]``; where it does not (a few positions in a hundred on fastapply-small), the tokens
  whose ``U`` reaches it are the only candidates, and their float32 logits decide, lowest id first on a
  tie as ``argmax`` does (more than ``CANDIDATES`` a position: its whole float32 row).

So the choices are float32's, token for token. The bound is checked against the float32 layer on the first
positions screened, and the screen is only used where it measured faster than float32 on this machine,
and only built once a process has read enough positions in float32 to earn its build back
(``PAYS_AFTER``): a server, a batch or a bench, not a single short edit.
"""

from __future__ import annotations

import time

EXACT = 16  # hidden channels of largest magnitude kept in float32
BLOCK = 64  # positions screened at a time: the int8 product's [BLOCK, V] output stays in cache
MIN_WEIGHTS = 1 << 22  # a smaller output layer is cheap in float32: the screen's own steps cost more
PAYS_AFTER = 2048  # positions read through the float32 layer before the screen is built (a quarter of
# a second, which about that many positions earn back): a single short edit never pays for it
BUILD_ROWS = 4096  # weight rows quantized at a time
FASTER = 0.75  # the share of the float32 layer's time under which the screen's own work is worth it
GAMMA_SLACK = 1.001  # the bound's coefficients, widened for their own float32 rounding
CANDIDATES = 64  # tokens per unsettled position whose float32 logits are computed one by one, on average
RELATIVE_SLACK = 1e-4  # of |h|·max|w_j|: covers the float32 sums that form U and the floor


def gamma(n: int) -> float:
    """The relative error bound of a float32 sum of ``n`` products."""
    unit = 2.0 ** -24
    return n * unit / (1 - n * unit)


def worth_screening(weight) -> bool:
    """Whether the screen may pay for the float32 output layer ``weight`` [V, H]: a large one, on a CPU;
    it is used where its ``faster`` says so (timed once per weight)."""
    import torch

    return (weight.dtype == torch.float32 and weight.device.type == "cpu" and weight.numel() >= MIN_WEIGHTS
            and hasattr(torch, "_int_mm"))


class _Seen:
    """What this process knows of one output layer's weight: positions read through it in float32, and
    its screen with the weight's version it was built for."""

    def __init__(self, weight):
        import weakref

        self.ref = weakref.ref(weight)
        self.read = 0
        self.screen: ScreenedArgmax | None = None
        self.version = -1


_SEEN: dict[int, _Seen] = {}  # id(weight) -> what is known of it


def _seen(weight) -> _Seen:
    """The entry of ``weight``, a fresh one where none is, or where the entry is a freed weight's whose
    address this one took."""
    entry = _SEEN.get(id(weight))
    if entry is None or entry.ref() is not weight:
        for stale in [key for key, old in _SEEN.items() if old.ref() is None]:
            del _SEEN[stale]
        entry = _SEEN[id(weight)] = _Seen(weight)
    return entry


def read_in_float32(weight, positions: int) -> None:
    """Count ``positions`` whose choices went through the float32 ``weight``: what ``ready`` waits for."""
    _seen(weight).read += positions


def build_early(weight) -> None:
    """Let ``weight``'s screen be built at the next request rather than after ``PAYS_AFTER`` positions: for
    a process that will read many (a bench, an eval, a server), whose warm-up then settles the screen and
    its verify costs before anything is timed."""
    entry = _seen(weight)
    entry.read = max(entry.read, PAYS_AFTER)


def ready(weight, sample=None) -> ScreenedArgmax | None:
    """The screen of ``weight`` where it is built or has now earned its build (``PAYS_AFTER`` positions
    read in float32 by this process), else None."""
    entry = _seen(weight)
    if (entry.screen is not None and entry.version == weight._version) or entry.read >= PAYS_AFTER:
        return screen_for(weight, sample)
    return None


def screen_for(weight, sample=None) -> ScreenedArgmax:
    """The screen of ``weight`` (its channels chosen from ``sample``, hidden states [S, H], where given),
    built once while the weight lives unchanged: its int8 copy, row constants and timing cost a few tenths
    of a second, which every request of a served model would pay again."""
    entry = _seen(weight)
    if entry.screen is None or entry.version != weight._version:
        entry.screen, entry.version = ScreenedArgmax(weight, sample), weight._version
    return entry.screen


class ScreenedArgmax:
    """``argmax(hidden @ weight.T)`` per row, as float32 computes it, mostly in int8.

    >>> import torch
    >>> weight = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # rows 0 and 2 tie: argmax takes 0
    >>> ScreenedArgmax(weight)(torch.tensor([[2.0, 1.0], [0.5, 3.0]]))
    [0, 1]
    """

    def __init__(self, weight, sample=None):
        import torch

        weight = weight.detach()  # a model's parameter: nothing here is trained
        self.weight = weight  # [V, H] float32
        # the channels kept in float32: the largest in ``sample`` (hidden states [S, H] of the model),
        # else the first; any choice is exact, a good one settles more positions
        size = weight.shape[1]
        count = min(EXACT, size)
        channels = (sample.detach().abs().amax(dim=0).topk(count).indices if sample is not None and len(sample)
                    else torch.arange(count))
        self.channels = channels.sort().values
        self.thin = weight[:, self.channels].t().contiguous()  # [E, V]: w_jO
        vocab = weight.shape[0]
        self.low = torch.empty(size, vocab, dtype=torch.int8)  # [H, V]: q_j, the kept channels 0
        self.row_scale = torch.empty(vocab)  # s_j
        # a row's constants of the bound: |s_j q_j|, |e_j|, |w_j| (for the kept channels' rounding and
        # the model's own), widened for their own rounding
        self.rows = torch.empty(4, vocab)
        for start in range(0, vocab, BUILD_ROWS):  # a few MB at a time: no fresh 100 MB buffers to fault in
            part = weight[start:start + BUILD_ROWS]
            rest = part.index_fill(1, self.channels, 0.0)  # the columns quantized
            scale = (rest.abs().amax(dim=1, keepdim=True) / 127).clamp(min=1e-30)
            quantized = (rest / scale).round_().clamp_(-127, 127)
            self.low[:, start:start + len(part)] = quantized.t()
            self.row_scale[start:start + len(part)] = scale[:, 0]
            scaled = quantized.mul_(scale)
            error = rest.sub_(scaled).norm(dim=1)
            scaled_norm = scaled.norm(dim=1)
            norm = part.norm(dim=1)
            # |e_j| takes the rounding of s_j q_j in float32 too
            self.rows[:, start:start + len(part)] = torch.stack([scaled_norm, error + 2.0 ** -23 * scaled_norm,
                                                                   norm, norm])
        self.rows *= GAMMA_SLACK
        self.norms = self.rows[2]
        self.max_norm = float(self.norms.max())
        self.trusted: bool | None = None  # whether the bound held where checked; None: not checked yet
        self.exact_rows = 0  # positions decided by float32 logits (some or all): for tests and benchmarks
        self._faster: bool | None = None
        # what ``faster`` times: a block of the sample (the model's own hidden states), else positions
        # pointing at tokens (the time hardly depends on which)
        self._timed = (sample.detach()[torch.arange(BLOCK) % len(sample)] if sample is not None and len(sample)
                       else weight[torch.randint(0, vocab, (BLOCK,), generator=torch.Generator().manual_seed(0))] * 3)

    @property
    def faster(self) -> bool:
        """Whether the screen's own work on a block of the sample's positions (the products, the bound,
        the two maxima every position needs) measured at most ``FASTER`` of the float32 layer's time here
        (best of 3 each). What it costs beyond that, the positions it cannot settle, depends on the text
        more than on the machine: about 1 in 20 of an answer's on fastapply-small."""
        if self._faster is None:
            import torch

            def screened():
                upper = self._upper(self._timed)[0]
                upper.max(dim=-1)
                upper.max(dim=-1)

            with torch.inference_mode():
                self._faster = _best_time(screened) <= FASTER * _best_time(lambda: self._exact(self._timed).tolist())
        return self._faster

    def __call__(self, hidden) -> list[int]:
        """The float32 argmax of each row of ``hidden`` [N, H] times the weight."""
        import torch

        choices: list[int] = []
        with torch.inference_mode():
            for start in range(0, len(hidden), BLOCK):
                choices.extend(self._block(hidden[start:start + BLOCK]))
        return choices

    def _block(self, hidden) -> list[int]:
        import torch

        if not bool(torch.isfinite(hidden).all()):  # no bound holds for them: float32 as it stands
            return self._exact(hidden).tolist()
        upper, step, size = self._upper(hidden)  # U / t
        if self.trusted is None:
            self.trusted = self._bound_holds(hidden, upper, step, size)
        if not self.trusted:
            return self._exact(hidden).tolist()
        ids = upper.max(dim=-1).indices  # [N]
        floor = self._floor(hidden, ids, step, size)  # [N]: the top token's float32 logit is at least this
        upper.scatter_(1, ids[:, None], float("-inf"))
        rest = upper.max(dim=-1).values  # [N]: the most any other token's float32 logit may be
        margin = RELATIVE_SLACK * size[:, 0] * self.max_norm / step[:, 0]  # the sums' own rounding
        choices = ids.tolist()
        unsure = (floor - rest <= margin).nonzero().flatten()
        if len(unsure):
            self.exact_rows += len(unsure)
            upper[unsure, ids[unsure]] = float("inf")
            possible = upper[unsure] >= (floor - margin)[unsure, None]  # [U, V]: tokens that may win
            counts = possible.sum(dim=-1).tolist()
            if sum(counts) > CANDIDATES * len(unsure):  # crowded: the whole float32 rows decide
                for row, choice in zip(unsure.tolist(), self._exact(hidden[unsure]).tolist()):
                    choices[row] = choice
            else:  # the candidates' float32 logits decide, lowest id first on a tie as argmax does
                rows, columns = possible.nonzero(as_tuple=True)  # by row, ascending ids within each
                logits = (hidden[unsure[rows]] * self.weight[columns]).sum(dim=-1)
                start = 0
                for row, count in zip(unsure.tolist(), counts):
                    choices[row] = int(columns[start + int(logits[start:start + count].argmax())])
                    start += count
        return choices

    def _upper(self, hidden):
        """``U / t`` of the module docstring at each position of ``hidden`` [N, H] ([N, V]), with ``t``
        [N, 1] and ``|h|`` [N, 1]."""
        import torch

        kept = hidden[:, self.channels]  # h_O [N, E]
        rest = hidden.index_fill(1, self.channels, 0.0)  # r
        step = (rest.abs().amax(dim=-1, keepdim=True) / 127).clamp(min=1e-12)  # t
        points = (rest / step).round().clamp(-127, 127)  # p
        left = (rest.double() - points.double() * step.double()).norm(dim=-1, keepdim=True).float()  # |d|
        upper = torch._int_mm(points.to(torch.int8), self.low) * self.row_scale  # s_j (q_j . p)
        upper.addmm_(kept / step, self.thin)  # + w_jO . h_O / t
        size = hidden.norm(dim=-1, keepdim=True)  # |h|
        constants = torch.cat([left, rest.norm(dim=-1, keepdim=True),
                               gamma(len(self.channels) + 8) * kept.norm(dim=-1, keepdim=True),
                               gamma(hidden.shape[1]) * size], dim=1)  # [N, 4]
        upper.addmm_(constants / step, self.rows)  # + the rounding terms
        return upper, step, size

    def _floor(self, hidden, ids, step, size):
        """A floor of the float32 logit of token ``ids[n]`` at each position, over ``t``: the logit as this
        computes it, less the rounding of its sum and of the model's."""
        logits = (hidden * self.weight[ids]).sum(dim=-1)
        return (logits - 2 * gamma(hidden.shape[1]) * self.norms[ids] * size[:, 0]) / step[:, 0]

    def _exact(self, hidden):
        import torch

        return torch.nn.functional.linear(hidden, self.weight).argmax(dim=-1)

    def _bound_holds(self, hidden, upper, step, size) -> bool:
        """Whether every float32 logit of ``hidden`` lies at most at its ``U``, and the top one's at least
        at its floor."""
        import torch

        exact = torch.nn.functional.linear(hidden, self.weight) / step  # [N, V]
        margin = RELATIVE_SLACK * size * self.max_norm / step
        ids = exact.argmax(dim=-1)
        floor = self._floor(hidden, ids, step, size)
        return bool((exact <= upper + margin).all() and (floor <= exact.gather(1, ids[:, None])[:, 0] + margin[:, 0]).all())


def _best_time(run, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times[1:])
