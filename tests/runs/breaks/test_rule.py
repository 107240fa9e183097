"""The demotion rule, pure: both sides of the floor and of the minimum number of labels."""

from __future__ import annotations

from runs.breaks import rule
from runs.breaks.rule import DEFAULT_FLOOR, DEFAULT_MIN_LABELS, Tally, demoted_set, is_demoted, under_floor, verdict_of


def test_precision_is_right_over_labelled():
    assert Tally(right=3, earlier=1, later=0, none=4).precision == 3 / 8
    assert Tally().precision is None


def test_it_demotes_under_the_floor_over_enough_labels():
    assert DEFAULT_FLOOR == 0.5 and DEFAULT_MIN_LABELS == 20
    assert under_floor(Tally(right=9, none=11))  # 45% over 20
    assert not under_floor(Tally(right=10, none=10))  # exactly on the floor is kept
    assert not under_floor(Tally(none=19))  # 0% but one label short


def test_the_project_settings_move_both_thresholds():
    assert under_floor(Tally(right=6, none=4), floor=0.7, min_labels=10)
    assert not under_floor(Tally(right=6, none=4), floor=0.6, min_labels=10)
    assert not under_floor(Tally(right=6, none=4), floor=0.7, min_labels=11)


def test_an_override_wins_over_the_rule():
    bad, good = Tally(none=30), Tally(right=30)
    assert is_demoted(bad) and not is_demoted(bad, rule.FORCE_SHOWN)
    assert is_demoted(good, rule.FORCE_DEMOTED) and not is_demoted(good)
    assert demoted_set({"requery": bad, "phantom_call": good}, {"stale_value": rule.FORCE_DEMOTED}) == {
        "requery", "stale_value"}


def test_the_verdict_a_reviewer_who_knows_the_lapse_gives():
    assert verdict_of(None, 3) is None
    assert verdict_of(4, None) == rule.NONE
    assert verdict_of(4, 4) == rule.RIGHT
    assert verdict_of(4, 2) == rule.EARLIER
    assert verdict_of(4, 6) == rule.LATER
