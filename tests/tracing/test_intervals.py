from __future__ import annotations

import pytest

from tracing.core.intervals import bounded_mean_interval, mean_interval, t_critical, wilson


def test_wilson_matches_the_textbook_values():
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)


def test_wilson_is_not_a_point_at_zero_or_all():
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    low, high = wilson(10, 10)
    assert low == pytest.approx(0.7225, abs=1e-4) and high == pytest.approx(1.0)


def test_wilson_of_nothing_is_none_and_bad_counts_raise():
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_t_interval_widens_with_few_runs():
    assert mean_interval([4.0]) is None
    low, high = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert (low, high) == (pytest.approx(0.4460, abs=1e-3), pytest.approx(4.5540, abs=1e-3))
    assert t_critical(4) > t_critical(30) > t_critical(1000) == pytest.approx(1.96, abs=1e-3)


def test_a_mean_of_probabilities_stays_in_0_1():
    low, high = bounded_mean_interval([0.0, 1.0, 1.0, 1.0])
    assert low >= 0.0 and high == 1.0
    assert bounded_mean_interval([1.0]) is None


def test_a_mean_that_cannot_be_negative_is_clipped_at_zero():
    import math

    assert mean_interval([0.01, 0.02, 1.6])[0] < 0
    low, high = bounded_mean_interval([0.01, 0.02, 1.6], 0.0, math.inf)
    assert low == 0.0 and high == mean_interval([0.01, 0.02, 1.6])[1]
