"""What a verify costs: the seconds a target takes to verify a draft of ``k`` tokens, measured once per
model, device, dtype and torch at a few sizes (``HFTarget`` times them), interpolated between them, and
kept in fastapply's cache so later runs plan drafts without timing again.

Costs timed while other work shared the CPU are dear and wrongly shaped (beside a training run a
256-token verify of fastapply-small measured 1.70 s against 0.41 s idle). So each is stored with the
share of the CPU its timing had (``CpuShare``), and a run that finds the CPU to itself times them again.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from fastapply.errors import FastapplyError
from fastapply.fileio import write_atomic
from fastapply.loading import cache_dir


@dataclass(frozen=True)
class CostModel:
    """Measured seconds per verify of ``k`` draft tokens, linearly interpolated between measured sizes."""

    points: tuple[tuple[int, float], ...]  # (k, seconds), sorted by k
    cpu_share: float = 1.0  # the share of the CPU they were timed with (``CpuShare``)

    @classmethod
    def monotone(cls, points: list[tuple[int, float]], cpu_share: float = 1.0) -> "CostModel":
        """From measurements, each lowered to the cheapest measured at a larger size: verifying fewer
        tokens never costs more, and a slow measurement (a busy machine) must not make a size look dear.

        >>> CostModel.monotone([(0, 1.0), (8, 3.0), (32, 2.0)]).points
        ((0, 1.0), (8, 2.0), (32, 2.0))
        """
        ordered = sorted(points)
        lowered, cheapest = [], float("inf")
        for k, seconds in reversed(ordered):
            cheapest = min(cheapest, seconds)
            lowered.append((k, cheapest))
        return cls(tuple(reversed(lowered)), cpu_share)

    def __call__(self, k: int) -> float:
        pts = self.points
        if k <= pts[0][0]:
            return pts[0][1]
        for (k0, s0), (k1, s1) in zip(pts, pts[1:]):
            if k <= k1:
                return s0 + (s1 - s0) * (k - k0) / (k1 - k0)
        (k0, s0), (k1, s1) = pts[-2], pts[-1]
        return s1 + (s1 - s0) * (k - k1) / (k1 - k0)


# Draft sizes whose verify is timed; the rest are interpolated. The small ones matter on a CPU, where
# a pass over two tokens can cost half again one over a single token, not 1/8 of the step to 8; the
# large ones up to ``decode.MAX_DRAFT``, since on a CPU the step from 128 to 256 is cheap per token
# (larger products run faster) and the step past it is not: extrapolated, 512 looked 25% cheaper.
CALIBRATION_SIZES = (0, 1, 2, 4, 8, 32, 128, 256, 512)


def verify_costs_path() -> Path:
    """Where each model's measured verify costs are kept, by ``cost_key``."""
    return cache_dir() / "verify-costs.json"


COST_TIMING = 6  # how ``HFTarget._calibrate`` times verifies; raised when that changes, so stored costs are re-timed


def cost_key(model_key: str, device, dtype, screened: bool = False) -> str:
    """The key of a model's verify costs measured on ``device`` in ``dtype`` with this torch and this way of
    timing (``COST_TIMING``), its output layer ``screened`` in int8 or not (``screen.py``)."""
    import torch

    return (f"{model_key}|{device}|{dtype}|torch {torch.__version__}|timing {COST_TIMING}"
            + ("|int8 screen" if screened else ""))


# Below this share of the CPU, other work ran beside the process (``CpuShare``).
SHARED_BELOW = 0.8


class CpuShare:
    """The share of the CPU this process has had since it was made: its CPU time over the wall time
    times the threads torch runs (at most the cores it may use). On an idle machine about 1 (measured
    0.97-1.02 over prefills and verifies of fastapply-small, two threads on two cores); beside a
    training run on the same cores about 1/2. 1 off a CPU device, whose timings this does not read."""

    MIN_SECONDS = 0.05  # a shorter stretch can fall between the scheduler's turns to other work

    def __init__(self, device):
        import torch

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self.threads = min(torch.get_num_threads(), cores) if torch.device(device).type == "cpu" else 0
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def share(self) -> float | None:
        """The share so far; None where under ``MIN_SECONDS`` passed on a CPU device: too short to tell."""
        if not self.threads:
            return 1.0
        wall = time.perf_counter() - self.wall
        if wall < self.MIN_SECONDS:
            return None
        return (time.process_time() - self.cpu) / (wall * self.threads)


def stored_costs(key: str) -> CostModel | None:
    """The verify costs stored under ``key`` if they were timed at ``CALIBRATION_SIZES``, else None."""
    try:
        entry = json.loads(verify_costs_path().read_text()).get(key)
        points, share = entry["points"], float(entry["cpu_share"])
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None
    if not points or [int(k) for k, _ in points] != list(CALIBRATION_SIZES):
        return None
    return CostModel.monotone([(int(k), float(s)) for k, s in points], share)


def store_costs(key: str, model: CostModel) -> None:
    """Keep ``model`` under ``key`` beside the other stored costs; an unwritable cache only costs a
    re-measurement next time."""
    path = verify_costs_path()
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        table = {}
    table[key] = {"points": [list(p) for p in model.points], "cpu_share": round(model.cpu_share, 3)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(table, indent=1).encode())  # a concurrent reader never sees half
    except (OSError, FastapplyError):
        pass
