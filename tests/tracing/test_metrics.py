from __future__ import annotations

import json

import pytest

from tests.eval_data import eval_runs
from tracing.core.metrics import (
    P95,
    Distribution,
    RunStats,
    pass_at_k,
    pass_curve,
    pass_hat_k,
    percentile,
    summarize,
    summarize_tasks,
)


# Hand-computed: n = 5 runs, c = 2 successes, C(5,k) = 5, 10, 10, 5, 1; C(3,k) = 3, 3, 1, 0, 0.
@pytest.mark.parametrize(
    ("k", "at", "hat"),
    [
        (1, 1 - 3 / 5, 2 / 5),
        (2, 1 - 3 / 10, 1 / 10),
        (3, 1 - 1 / 10, 0.0),
        (4, 1.0, 0.0),  # only 3 failures: any 4 runs include a success
        (5, 1.0, 0.0),
    ],
)
def test_pass_k_n5_c2(k, at, hat):
    assert pass_at_k(5, 2, k) == pytest.approx(at)
    assert pass_hat_k(5, 2, k) == pytest.approx(hat)


def test_pass_k_more_hand_values():
    # n = 4, c = 3: pass^k = C(3,k)/C(4,k) = 3/4, 3/6, 1/4, 0.
    assert [pass_hat_k(4, 3, k) for k in range(1, 5)] == pytest.approx([0.75, 0.5, 0.25, 0.0])
    assert [pass_at_k(4, 3, k) for k in range(1, 5)] == pytest.approx([0.75, 1.0, 1.0, 1.0])
    # n = 10, c = 3, k = 5: 1 - C(7,5)/C(10,5) = 1 - 21/252.
    assert pass_at_k(10, 3, 5) == pytest.approx(11 / 12)
    # pass^2 for 8 of 10: C(8,2)/C(10,2) = 28/45.
    assert pass_hat_k(10, 8, 2) == pytest.approx(28 / 45)


def test_pass_k_edges():
    assert pass_at_k(1, 1, 1) == 1.0 and pass_hat_k(1, 1, 1) == 1.0
    assert pass_at_k(1, 0, 1) == 0.0 and pass_hat_k(1, 0, 1) == 0.0
    assert all(pass_at_k(6, 0, k) == 0.0 for k in range(1, 7))
    assert all(pass_hat_k(6, 6, k) == 1.0 for k in range(1, 7))


def test_pass_at_1_equals_pass_hat_1_equals_success_rate():
    for n in range(1, 8):
        for c in range(n + 1):
            assert pass_at_k(n, c, 1) == pytest.approx(c / n) == pass_hat_k(n, c, 1)


def test_pass_curve_monotone():
    curve = pass_curve(8, 5)
    assert list(curve.ks) == list(range(1, 9))
    assert list(curve.at) == sorted(curve.at)
    assert list(curve.hat) == sorted(curve.hat, reverse=True)
    assert curve.at[1] == pytest.approx(pass_at_k(8, 5, 2))


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (5, 2, 6, "k must be between 1 and n=5, got 6"),
        (5, 2, 0, "k must be between 1 and n=5, got 0"),
        (5, 6, 1, "c \\(successes\\) must be between 0 and n=5, got 6"),
        (5, -1, 1, "c \\(successes\\) must be between 0 and n=5, got -1"),
        (0, 0, 1, "n \\(number of runs\\) must be at least 1, got 0"),
        (-3, 0, 1, "at least 1"),
        (5, 2, 1.5, "k must be an integer"),
        (5, True, 1, "c must be an integer"),
    ],
)
def test_bad_input_raises_clear_value_error(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match=message):
        pass_hat_k(n, c, k)


def test_pass_curve_bad_input():
    with pytest.raises(ValueError, match="at least 1"):
        pass_curve(0, 0)
    with pytest.raises(ValueError, match="successes"):
        pass_curve(3, 4)


# -- percentiles (nearest rank) ---------------------------------------------


def test_percentile_nearest_rank():
    assert percentile(list(range(1, 21)), P95) == 19  # rank ceil(0.95 * 20) = 19
    assert percentile(list(range(1, 22)), P95) == 20  # rank ceil(19.95) = 20
    assert percentile(list(range(1, 11)), P95) == 10
    assert percentile(list(range(1, 101)), P95) == 95
    assert percentile([4, 1, 3, 2], 50) == 2  # an observed value, no interpolation
    assert percentile([7], P95) == 7
    assert percentile([], P95) is None
    assert percentile([3, 1], 100) == 3


def test_percentile_bad_p():
    with pytest.raises(ValueError, match="percentile"):
        percentile([1], 0)
    with pytest.raises(ValueError, match="percentile"):
        percentile([1], 101)


def test_distribution():
    d = Distribution.of([10, 2, 6, 2])
    assert (d.count, d.mean, d.p50, d.p95, d.min, d.max) == (4, 5.0, 2, 10, 2, 10)
    empty = Distribution.of([])
    assert empty.count == 0 and empty.mean is None and empty.p95 is None


# -- summaries -----------------------------------------------------------------


def stats(task: str, success: bool | None, steps: int, tokens: int = 100, **kw) -> RunStats:
    return RunStats(task, success, steps, prompt_tokens=tokens - 10, completion_tokens=10, **kw)


def test_summarize_one_task():
    runs = [
        stats("t", True, 4, 400),
        stats("t", False, 30, 3000, hit_max_steps=True),
        stats("t", True, 6, 600),
        stats("t", None, 2, 200),  # still running: no outcome yet
    ]
    s = summarize(runs)
    assert (s.runs, s.scored, s.successes) == (4, 3, 2)
    assert s.success_rate == pytest.approx(2 / 3)
    assert s.passes is not None and s.passes.n == 3
    assert s.passes.at == pytest.approx((2 / 3, 1.0, 1.0))
    assert s.passes.hat == pytest.approx((2 / 3, 1 / 3, 0.0))
    assert s.over_max_steps_rate == 0.25
    assert s.steps.mean == pytest.approx(10.5) and s.steps.p95 == 30 and s.steps.p50 == 4
    assert s.tokens.values == (400, 3000, 600, 200)


def test_summarize_nothing_scored_or_no_runs():
    s = summarize([stats("t", None, 3)])
    assert s.success_rate is None and s.passes is None and s.steps.count == 1
    empty = summarize([])
    assert empty.runs == 0 and empty.over_max_steps_rate is None and empty.steps.mean is None


def test_summarize_tasks_overall_averages_per_task_pass_k():
    runs = [
        stats("a", True, 3),
        stats("a", False, 5),  # a: n=2, c=1
        stats("b", True, 4),
        stats("b", True, 4),
        stats("b", False, 8),  # b: n=3, c=2
    ]
    ts = summarize_tasks(runs)
    assert list(ts.by_task) == ["a", "b"]
    assert ts.by_task["a"].success_rate == 0.5
    # k=1: (1/2 + 2/3) / 2; k=2: (1 + 1) / 2 and (0 + 1/3) / 2; k=3: only b.
    assert ts.tasks_at == (2, 2, 1)
    assert ts.pass_at == pytest.approx(((1 / 2 + 2 / 3) / 2, 1.0, 1.0))
    assert ts.pass_hat == pytest.approx(((1 / 2 + 2 / 3) / 2, (0 + 1 / 3) / 2, 0.0))
    # Pooled figures over all runs.
    assert ts.overall.runs == 5 and ts.overall.successes == 3
    assert ts.overall.steps.p95 == 8


def test_summarize_tasks_empty():
    ts = summarize_tasks([])
    assert ts.by_task == {} and ts.pass_at == () and ts.overall.runs == 0


def test_eval_readme_figures_reproduced():
    path = eval_runs("reflexion_hotpotqa")
    runs = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            runs.append(RunStats(obj["task"], obj["success"], len(obj["steps"])))
    s = summarize(runs)
    # shared/eval/README.md: 441 runs, mean / p95 steps 11.2 / 18, success 0.19.
    assert s.runs == 441
    assert round(s.steps.mean, 1) == 11.2 and s.steps.p95 == 18
    assert round(s.success_rate, 2) == 0.19
    ts = summarize_tasks(runs)
    assert ts.pass_at[0] <= ts.pass_at[1] and ts.pass_hat[1] <= ts.pass_hat[0]
