"""Distributions over reruns: pass@k, pass^k, success rate, step and token spread.

DESIGN.md: "Measure distributions, not single runs." The same prompt run n
times with c successes gives, for each k = 1..n:

- pass@k — probability that at least one of k runs drawn without replacement
  from the n succeeds; the unbiased estimator of Chen et al. 2021 (Codex
  paper): ``1 - C(n - c, k) / C(n, k)``.
- pass^k — probability that all k drawn runs succeed (tau-bench):
  ``C(c, k) / C(n, k)``.

pass@1 == pass^1 == c / n. pass@k grows with k, pass^k shrinks: the gap between
them is how unreliable an agent is. Pure Python, no Django.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Percentile reported as "P95" everywhere (run list, compare page, dashboard).
P95 = 95.0


def _check_counts(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if n < 1:
        raise ValueError(f"n (number of runs) must be at least 1, got {n}")
    if c < 0 or c > n:
        raise ValueError(f"c (successes) must be between 0 and n={n}, got {c}")
    if k < 1 or k > n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k runs succeeds) = 1 - C(n-c, k) / C(n, k).

    Raises ValueError when k is not in 1..n, c not in 0..n, or n < 1.
    """
    _check_counts(n, c, k)
    # math.comb(a, k) is 0 when k > a: fewer than k failures means some success
    # is certain.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: P(all k runs succeed) = C(c, k) / C(n, k). Same errors as pass_at_k."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


@dataclass(frozen=True)
class PassCurve:
    """pass@k and pass^k for k = 1..n; ``at[k - 1]`` is pass@k."""

    n: int
    c: int
    at: tuple[float, ...]
    hat: tuple[float, ...]

    @property
    def ks(self) -> range:
        return range(1, self.n + 1)


def pass_curve(n: int, c: int) -> PassCurve:
    """Both estimators for every k = 1..n (raises ValueError like pass_at_k)."""
    _check_counts(n, c, 1)
    ks = range(1, n + 1)
    return PassCurve(
        n=n,
        c=c,
        at=tuple(pass_at_k(n, c, k) for k in ks),
        hat=tuple(pass_hat_k(n, c, k) for k in ks),
    )


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least p% of the values
    at or below it, i.e. ``sorted(values)[ceil(p / 100 * N) - 1]``.

    Chosen over interpolation because it is always an observed value ("P95 = 18
    steps" is a run that happened), and it reproduces the p95 column of shared/eval/README.md.
    None for no values; p must be in (0, 100].
    """
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    if not values:
        return None
    ordered = sorted(values)
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


@dataclass(frozen=True)
class Distribution:
    """Summary of one number over runs; all None when there are no values."""

    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    min: float | None
    max: float | None
    values: tuple[float, ...] = field(repr=False, default=())

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        vals = tuple(values)
        if not vals:
            return cls(0, None, None, None, None, None, ())
        return cls(
            count=len(vals),
            mean=sum(vals) / len(vals),
            p50=percentile(vals, 50),
            p95=percentile(vals, P95),
            min=min(vals),
            max=max(vals),
            values=vals,
        )


@dataclass(frozen=True)
class RunStats:
    """What the metrics need from one run (the views build these from Run rows)."""

    task: str
    # None = not scored (no gold answer, or still running): excluded from the
    # success rate and pass@k / pass^k, still counted in steps and tokens.
    success: bool | None
    steps: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    # The run was cut by the step budget (DESIGN: "over-max-step rate").
    hit_max_steps: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Summary:
    runs: int
    scored: int  # n: runs with a known outcome
    successes: int  # c
    success_rate: float | None  # c / n; None when nothing is scored
    passes: PassCurve | None  # None when nothing is scored
    over_max_steps_rate: float | None  # None for no runs
    steps: Distribution
    tokens: Distribution
    latency_ms: Distribution


def summarize(runs: Iterable[RunStats]) -> Summary:
    """Success rate, pass@k / pass^k (k = 1..n), step / token / latency spread.

    Meant for runs of one task; for several tasks use ``summarize_tasks``, whose
    overall pass@k averages per-task values as pass@k is defined per problem.
    """
    runs = list(runs)
    scored = [r for r in runs if r.success is not None]
    n = len(scored)
    c = sum(1 for r in scored if r.success)
    return Summary(
        runs=len(runs),
        scored=n,
        successes=c,
        success_rate=c / n if n else None,
        passes=pass_curve(n, c) if n else None,
        over_max_steps_rate=(sum(r.hit_max_steps for r in runs) / len(runs)) if runs else None,
        steps=Distribution.of(r.steps for r in runs),
        tokens=Distribution.of(r.tokens for r in runs),
        latency_ms=Distribution.of(r.latency_ms for r in runs),
    )


@dataclass(frozen=True)
class TaskSummary:
    by_task: dict[str, Summary]
    overall: Summary  # all runs pooled (steps, tokens, success rate)
    # Mean over tasks of each task's pass@k / pass^k, for k = 1..max n; a task
    # only contributes to the k it can estimate (k <= its n). ``tasks_at[k-1]``
    # says how many tasks went into that mean.
    pass_at: tuple[float, ...]
    pass_hat: tuple[float, ...]
    tasks_at: tuple[int, ...]


def summarize_tasks(runs: Iterable[RunStats]) -> TaskSummary:
    """Per-task summaries and the overall figures (tasks in first-seen order)."""
    runs = list(runs)
    grouped: dict[str, list[RunStats]] = {}
    for r in runs:
        grouped.setdefault(r.task, []).append(r)
    by_task = {task: summarize(rs) for task, rs in grouped.items()}
    curves = [s.passes for s in by_task.values() if s.passes is not None]
    max_n = max((cv.n for cv in curves), default=0)
    pass_at, pass_hat, tasks_at = [], [], []
    for k in range(1, max_n + 1):
        usable = [cv for cv in curves if cv.n >= k]
        tasks_at.append(len(usable))
        pass_at.append(sum(cv.at[k - 1] for cv in usable) / len(usable))
        pass_hat.append(sum(cv.hat[k - 1] for cv in usable) / len(usable))
    return TaskSummary(
        by_task=by_task,
        overall=summarize(runs),
        pass_at=tuple(pass_at),
        pass_hat=tuple(pass_hat),
        tasks_at=tuple(tasks_at),
    )
