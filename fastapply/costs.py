"""What a verify costs: the seconds a target takes to verify a draft of ``k`` tokens, measured once per
model, device, dtype and torch at a few sizes (``HFTarget`` times them), interpolated between them, and
kept in fastapply's cache so later runs plan drafts without timing again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fastapply.errors import FastapplyError
from fastapply.fileio import write_atomic
from fastapply.loading import cache_dir


@dataclass(frozen=True)
class CostModel:
    """Measured seconds per verify of ``k`` draft tokens, linearly interpolated between measured sizes."""

    points: tuple[tuple[int, float], ...]  # (k, seconds), sorted by k

    @classmethod
    def monotone(cls, points: list[tuple[int, float]]) -> "CostModel":
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
        return cls(tuple(reversed(lowered)))

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
# a pass over two tokens can cost half again one over a single token, not 1/8 of the step to 8.
CALIBRATION_SIZES = (0, 1, 2, 4, 8, 32, 128, 256)


def verify_costs_path() -> Path:
    """Where each model's measured verify costs are kept, by ``cost_key``."""
    return cache_dir() / "verify-costs.json"


COST_TIMING = 5  # how ``HFTarget._calibrate`` times verifies; raised when that changes, so stored costs are re-timed


def cost_key(model_key: str, device, dtype, screened: bool = False) -> str:
    """The key of a model's verify costs measured on ``device`` in ``dtype`` with this torch and this way of
    timing (``COST_TIMING``), its output layer ``screened`` in int8 or not (``screen.py``)."""
    import torch

    return (f"{model_key}|{device}|{dtype}|torch {torch.__version__}|timing {COST_TIMING}"
            + ("|int8 screen" if screened else ""))


def stored_costs(key: str) -> CostModel | None:
    """The verify costs stored under ``key`` if they were timed at ``CALIBRATION_SIZES``, else None."""
    try:
        points = json.loads(verify_costs_path().read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    if not points or [int(k) for k, _ in points] != list(CALIBRATION_SIZES):
        return None
    return CostModel.monotone([(int(k), float(s)) for k, s in points])


def store_costs(key: str, model: CostModel) -> None:
    """Keep ``model`` under ``key`` beside the other stored costs; an unwritable cache only costs a
    re-measurement next time."""
    path = verify_costs_path()
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        table = {}
    table[key] = [list(p) for p in model.points]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(table, indent=1).encode())  # a concurrent reader never sees half
    except (OSError, FastapplyError):
        pass
