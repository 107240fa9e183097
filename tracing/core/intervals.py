"""Confidence intervals for the figures of an evaluation (rates, means, pass@k).

- Rates: the Wilson score interval, which stays inside [0, 1] and is honest
  at 0/n and n/n, where the normal approximation collapses to a point
  (Agresti & Coull 1998; Brown, Cai & DasGupta 2001).
- Means (steps, tokens, latency, cost): Student's t interval; with few runs the
  spread says more than the central limit theorem promises. These quantities
  cannot be negative: the interval is clipped at 0 (bounded_mean_interval).
- Means over tasks of per-task estimates (pass@k, pass^k): the same t
  interval over the tasks, clipped to [0, 1]. A bootstrap was tried first:
  1,000 resamples for every figure cost the page half a second
  (bench/evaluation.py) for an interval no better founded with 20 tasks.
Pure, no Django.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# Two-sided 95 %.
Z95 = 1.959964
# Student's t, two-sided 95 %, by degrees of freedom; beyond the table, z.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """(low, high) of the Wilson score interval; None for n = 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def t_critical(df: int) -> float:
    """The 95 % two-sided t value for df degrees of freedom (the next smaller tabled df: conservative)."""
    if df < 1:
        raise ValueError("df must be at least 1")
    usable = [d for d in _T95 if d <= df]
    return Z95 if df > max(_T95) else _T95[max(usable)]


def mean_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """(low, high) of the t interval of the mean; None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_critical(n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def bounded_mean_interval(values: Sequence[float], low: float = 0.0, high: float = 1.0) -> tuple[float, float] | None:
    """The t interval of the mean of values that live in [low, high] (pass@k
    per task; high=math.inf for durations, counts and costs), clipped to that range."""
    ci = mean_interval(values)
    return None if ci is None else (max(low, ci[0]), min(high, ci[1]))
