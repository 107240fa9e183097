from __future__ import annotations

import math

import pytest

from tests.tracing.helpers import act, loop_run, obs
from tracing.core.steps import Intervention, Step
from tracing.core.watchdog import (
    COMPLEXITY_MAX,
    COMPLEXITY_MIN,
    COOLDOWN,
    DEFAULT_POLICY,
    FAST_FUTILE,
    HINTS_ONLY_POLICY,
    IGNORED_STOP,
    IGNORED_WITHIN,
    INVALID_RUN,
    OFF_POLICY,
    REPETITION_MIN_REPEATS,
    RESET_AFTER,
    STOP_FUTILE,
    STOP_INVALID,
    STOP_STREAK,
    Ladder,
    Policy,
    PolicyError,
    Watchdog,
    Windows,
    estimate_complexity,
)

# The fast lane off: these tests measure the ladder itself (hint, redirect, stop).
FLAT = Policy(name="flat", version=3, use_complexity=False, ladder=Ladder(fast_futile=0))


def run(policy: Policy, steps: list[Step], goal: str = "") -> tuple[Watchdog, list[tuple[int, Intervention]]]:
    wd = Watchdog(policy, goal=goal)
    out = []
    for s in steps:
        iv = wd.observe(s)
        if iv is not None:
            out.append((s.index, iv))
    return wd, out


def novel_turns(n: int, start: int) -> list[Step]:
    out = []
    for k in range(n):
        i = start + 2 * k
        out += [act(i, "search", f"topic{i} item{i}"), obs(i + 1, f"topic{i} item{i} fresh fact number {i} value{i}")]
    return out


# -- policy ------------------------------------------------------------------


def test_policy_roundtrip_and_defaults():
    d = DEFAULT_POLICY.to_dict()
    assert Policy.from_dict(d) == DEFAULT_POLICY
    p = Policy.from_dict({"name": "x", "windows": {"stagnation": 6}})
    assert p.windows.stagnation == 6 and p.thresholds == DEFAULT_POLICY.thresholds
    assert d["ladder"]["tiers"] == ["hint", "redirect", "stop"]


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ([], "(root)"),
        ({"nmae": "x"}, "nmae"),
        ({"name": ""}, "name"),
        ({"version": "2"}, "version"),
        ({"version": 0}, "version"),
        ({"enabled": "yes"}, "enabled"),
        ({"thresholds": []}, "thresholds"),
        ({"thresholds": {"repetition_similarity": 1.5}}, "thresholds.repetition_similarity"),
        ({"thresholds": {"novelty_min": "high"}}, "thresholds.novelty_min"),
        ({"thresholds": {"novelty_min": True}}, "thresholds.novelty_min"),
        ({"thresholds": {"novelty_min": math.nan}}, "thresholds.novelty_min"),
        ({"thresholds": {"bogus": 1}}, "thresholds.bogus"),
        ({"windows": {"stagnation": 0}}, "windows.stagnation"),
        ({"windows": {"repetition": 2.5}}, "windows.repetition"),
        ({"ladder": {"tiers": ["stop", "hint"]}}, "ladder.tiers"),
        ({"ladder": {"tiers": ["nudge"]}}, "ladder.tiers"),
        ({"ladder": {"tiers": []}}, "ladder.tiers"),
        ({"ladder": {"cooldown": -1}}, "ladder.cooldown"),
    ],
)
def test_bad_policy_names_the_field(obj, field):
    with pytest.raises(PolicyError) as exc:
        Policy.from_dict(obj)
    assert exc.value.field == field
    assert field in str(exc.value)


def test_integral_float_accepted():
    assert Policy.from_dict({"windows": {"repetition": 4.0}}).windows.repetition == 4


# -- ladder ------------------------------------------------------------------


def test_loop_escalates_hint_redirect_stop_and_stops():
    wd, ivs = run(FLAT, loop_run(30))
    tiers = [iv.tier for _, iv in ivs]
    assert tiers[:2] == ["hint", "redirect"] and tiers[-1] == "stop"
    assert tiers.count("stop") == 1
    stop_step, stop = ivs[-1]
    assert stop.evidence["policy"] == "flat" and stop.evidence["policy_version"] == 3
    # Every intervention was followed by the same call again: the ladder climbed
    # at each one, and three ignored in a row are the grounds (IGNORED_STOP).
    assert stop.evidence["threshold"]["name"] == "ladder.ignored_stop"
    assert stop.evidence["threshold"]["score"] == IGNORED_STOP
    assert "were each followed by the same loop" in stop.message and "Fallback" in stop.message
    # Without that ground the futile repeats stop it, after the cooldown.
    p = Policy(name="flat", version=3, use_complexity=False, ladder=Ladder(fast_futile=0, ignored_stop=0))
    _, ivs = run(p, loop_run(30))
    stop = ivs[-1][1]
    assert stop.evidence["threshold"]["name"] == "ladder.stop_futile"
    assert stop.evidence["threshold"]["score"] >= STOP_FUTILE
    assert "same unusable result" in stop.message
    assert wd.stopped and wd.observe(obs(999, "anything")) is None


def varied_stall(n: int) -> list[Step]:
    """n turns of different queries that each bring back the same usable page:
    no progress, but neither futile repeats nor invalid results."""
    out = []
    for k in range(n):
        out += [act(2 * k, "search", f"query number {k} variant{k}"),
                obs(2 * k + 1, "The same long page: query number results about rivers, mountains and towns.")]
    return out


def test_stop_streak_both_sides():
    # Only the stagnation streak can ground a stop here.
    p = Policy(name="flat", use_complexity=False, ladder=Ladder(cooldown=0))
    _, below = run(p, varied_stall(STOP_STREAK))  # the first page is progress
    assert all(iv.tier != "stop" for _, iv in below)
    _, at = run(p, varied_stall(STOP_STREAK + 1))
    assert at[-1][1].tier == "stop"
    assert at[-1][1].evidence["threshold"] == {
        "name": "ladder.stop_streak", "value": STOP_STREAK, "score": STOP_STREAK, "op": ">="
    }


def test_stop_futile_both_sides():
    # Same call, same empty result, nothing effective in between.
    p = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), stop_streak=100, stop_invalid=100))
    _, below = run(p, loop_run(STOP_FUTILE))  # STOP_FUTILE calls = STOP_FUTILE - 1 repeats
    assert all(iv.tier != "stop" for _, iv in below)
    wd, at = run(p, loop_run(STOP_FUTILE + 1))
    assert at[-1][1].tier == "stop" and wd.futile == STOP_FUTILE


def test_a_repeat_after_something_effective_is_not_futile():
    # run_speed_test() after the user toggled something: a legitimate re-check.
    p = Policy(use_complexity=False, ladder=Ladder(cooldown=0, stop_streak=100, stop_invalid=100))
    steps = []
    for k in range(6):
        i = 4 * k
        steps += [act(i, "run_speed_test", {}), obs(i + 1, "Speed test failed: No Connection."),
                  Step(i + 2, "observation", f"I toggled setting number {k} like you said.", tool="user"),
                  Step(i + 3, "thought", "Let me test again.")]
    wd, ivs = run(p, steps)
    assert wd.futile == 0 and all(iv.tier != "stop" for _, iv in ivs)


def count_loop(variants: int, repeats: int, result: str = "0") -> list[Step]:
    """`variants` different commands, then the last one `repeats` more times; every one prints `result`."""
    cmds = [f"find /testbed -name '*.gz' variant{k} | wc -l" for k in range(variants)]
    cmds += [cmds[-1]] * repeats
    return [s for k, c in enumerate(cmds) for s in (act(2 * k, "bash", c), obs(2 * k + 1, result, "bash"))]


def test_repeating_a_value_another_call_already_returned_is_not_futile():
    # InterCode: three formulations of a count print the same "0", then the
    # last one is run again and again. The value is confirmed, not a dead end.
    p = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), stop_streak=100, stop_invalid=100))
    wd, ivs = run(p, count_loop(3, 6))
    assert wd.futile == 0 and all(iv.tier != "stop" for _, iv in ivs)
    # The other side: the same call and value without another call having
    # returned it first is a futile repeat (tau2's get_details_by_id loop).
    wd, ivs = run(p, count_loop(1, STOP_FUTILE))
    assert wd.futile == STOP_FUTILE and ivs[-1][1].tier == "stop"
    # A repeated *unusable* result is futile even if another call got it too:
    # the same error from two commands is the same failure, not a confirmation.
    wd, ivs = run(p, count_loop(3, STOP_FUTILE, "find: '/testbed': No such file or directory"))
    assert wd.futile == STOP_FUTILE and ivs[-1][1].tier == "stop"


def test_a_confirmed_value_loop_is_still_stopped_by_the_streak():
    # Not futile, but no progress: STOP_STREAK still ends it.
    p = Policy(use_complexity=False, ladder=Ladder(cooldown=0))
    wd, ivs = run(p, count_loop(3, STOP_STREAK))
    assert ivs[-1][1].tier == "stop"
    assert ivs[-1][1].evidence["threshold"]["name"] == "ladder.stop_streak"


# Only the fast lane can stop these runs: every other ground is out of reach.
LANE = Policy(use_complexity=False, ladder=Ladder(stop_streak=100, stop_futile=100, stop_invalid=100))


def test_fast_lane_both_sides():
    assert FAST_FUTILE == 1
    # Two identical failing calls: one futile repeat, and the hint on it. No stop yet.
    wd, ivs = run(LANE, loop_run(2))
    assert [iv.tier for _, iv in ivs] == ["hint"] and not wd.stopped
    # The third identical call after that hint is stopped at the call, before it
    # runs: no redirect, no cooldown.
    wd, ivs = run(LANE, loop_run(3))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (4, "stop")]
    stop = ivs[-1][1]
    assert stop.evidence["threshold"] == {"name": "ladder.fast_futile", "value": 1, "score": 1, "op": ">="}
    assert "before it ran" in stop.message and "hint at step 3" in stop.message
    # One side further: with fast_futile=2 the third call runs and the fourth is stopped.
    p2 = Policy(use_complexity=False, ladder=Ladder(stop_streak=100, stop_futile=100, stop_invalid=100, fast_futile=2))
    _, ivs = run(p2, loop_run(3))
    assert all(iv.tier != "stop" for _, iv in ivs)
    _, ivs = run(p2, loop_run(4))
    assert ivs[-1][0] == 6 and ivs[-1][1].evidence["threshold"]["name"] == "ladder.fast_futile"


def test_fast_lane_needs_a_hint_after_the_repeat():
    # No hint tier: nothing told the model, so nothing is cut short.
    p = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), stop_streak=100, stop_futile=100, stop_invalid=100))
    wd, ivs = run(p, loop_run(8))
    assert ivs == [] and not wd.stopped
    # A hint given *before* the call first failed again is not about this loop.
    steps = [act(0, "search", "alpha"), obs(1, "No results"), act(2, "search", "beta"), obs(3, "Invalid action!")]
    steps += loop_run(3, start=4)  # the hint came at step 3; the loop's first repeat is at step 7
    patient = Policy(use_complexity=False, ladder=Ladder(cooldown=100, stop_streak=100, stop_futile=100,
                                                         stop_invalid=100))
    wd, ivs = run(patient, steps)  # the cooldown keeps the watchdog quiet after the hint
    assert [s for s, _ in ivs] == [3] and not wd.stopped
    # With the watchdog free to speak, the repeat at 7 gets the redirect, not a hint: the
    # ladder is past the shortcut and its own stop grounds (out of reach here) apply.
    wd, ivs = run(LANE, steps)
    assert [(s, iv.tier) for s, iv in ivs[:2]] == [(3, "hint"), (7, "redirect")] and not wd.stopped


def test_fast_lane_takes_dead_results_not_timeouts():
    # A timeout may pass on a retry: never cut short.
    wd, ivs = run(LANE, loop_run(6, "Command timed out"))
    assert all(iv.evidence["threshold"]["name"] != "ladder.fast_futile" for _, iv in ivs)
    # The same data back again, nothing effective in between, is a dead loop too
    # (tau2's get_details_by_id x96): the repetition hint comes at the third call's
    # result (a repeat that got data is judged from the third call), the fourth
    # call is stopped before it runs.
    record = '{"line_id": "L1002", "status": "Active"}'
    wd, ivs = run(LANE, loop_run(3, record))
    assert [(s, iv.tier) for s, iv in ivs] == [(5, "hint")] and not wd.stopped
    wd, ivs = run(LANE, loop_run(4, record))
    assert [(s, iv.tier) for s, iv in ivs] == [(5, "hint"), (6, "stop")]
    assert ivs[-1][1].evidence["threshold"]["name"] == "ladder.fast_futile"
    # Off, or without a stop tier: never (the hints ignored are no ground here either).
    off = Policy(use_complexity=False, ladder=Ladder(stop_streak=100, stop_futile=100, stop_invalid=100, fast_futile=0,
                                                     ignored_stop=0))
    assert not run(off, loop_run(6))[0].stopped
    assert not run(off, loop_run(6, record))[0].stopped
    assert not run(HINTS_ONLY_POLICY, loop_run(20))[0].stopped


def test_fast_lane_spares_a_confirmed_value():
    # The value was first returned by a different call: checking it again is
    # confirmation, not a dead loop (STOP_FUTILE's comment); the lane never fires.
    steps = [act(0, "sql", "SELECT COUNT(*) FROM t WHERE a = 1"), obs(1, "[(0,)]", "sql")]
    steps += loop_run(6, "[(0,)]", start=2)
    wd, ivs = run(LANE, steps)
    assert all(iv.evidence["threshold"]["name"] != "ladder.fast_futile" for _, iv in ivs) and not wd.stopped


def test_a_counter_in_an_error_is_no_new_information():
    # The same code run again fails the same way; only the interpreter's cell
    # number and the steps-left notice change. For an unusable result the digits
    # are blanked before comparing, so this is a dead loop: hint, then a stop at
    # the third call.
    def cell(n: int, left: int) -> str:
        return (f"AssertionError Traceback (most recent call last)\nCell In[{n}], line 4\n"
                f"----> 4 assert f(2) == 8\nAssertionError:\nYou have {left} steps left.")
    steps = []
    for k in range(3):
        steps += [act(2 * k, "execute", "def f(r):\n    return 4 * r**2\nassert f(2) == 8"),
                  obs(2 * k + 1, cell(k + 1, 4 - k), "execute")]
    wd, ivs = run(LANE, steps)
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (4, "stop")]
    # The other side: valid output whose numbers change is new data, digits and
    # all; the same call printing a growing count is never a dead loop.
    steps = []
    for k in range(6):
        steps += [act(2 * k, "bash", "wc -l log.txt"), obs(2 * k + 1, f"{100 + k} log.txt lines counted", "bash")]
    wd, ivs = run(LANE, steps)
    assert wd.futile == 0 and not wd.stopped


def test_fast_lane_resets_after_progress():
    # A loop (hint at 3), then progress: the loop's count is cleared, so the same
    # failing call afterwards is not cut short.
    p = Policy(use_complexity=False, ladder=Ladder(cooldown=0, stop_streak=100, stop_futile=100, stop_invalid=100))
    steps = loop_run(2) + [act(4, "search", "other topic"), obs(5, "A fresh page about another topic at last.")]
    steps += [act(6, "search", "same query"), obs(7, "Nothing happens.")]
    wd, ivs = run(p, steps)
    assert not wd.stopped and wd._dead_calls == {}
    # It counts again from there: the repeat at 9 is the first futile repeat of the new episode.
    steps += [act(8, "search", "same query"), obs(9, "Nothing happens.")]
    wd, _ = run(p, steps)
    assert not wd.stopped and list(wd._dead_calls.values()) == [(1, 9)]


def test_stop_invalid_both_sides():
    # Different calls, each failing: unusable results in a row.
    p = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), stop_streak=100, stop_futile=100))

    def failing(n):
        return [s for k in range(n) for s in (act(2 * k, "search", f"q{k} x{k}"), obs(2 * k + 1, "Error: 500"))]
    _, below = run(p, failing(STOP_INVALID - 1))
    assert all(iv.tier != "stop" for _, iv in below)
    _, at = run(p, failing(STOP_INVALID))
    assert at[-1][1].tier == "stop"
    assert at[-1][1].evidence["threshold"]["name"] == "ladder.stop_invalid"


def test_identical_tool_calls_with_identical_results_stop_within_ten_calls():
    # A tool-calling loop (tau2: get_details_by_id 96 times) under the default policy.
    steps = []
    for k in range(96):
        steps += [act(2 * k, "get_details_by_id", {"id": "L1002"}),
                  obs(2 * k + 1, '{"line_id": "L1002", "status": "Active", "data_used_gb": 8.7}',
                      tool="get_details_by_id")]
    wd, ivs = run(DEFAULT_POLICY, steps)
    assert wd.stopped
    calls_at_stop = ivs[-1][0] // 2 + 1
    assert calls_at_stop <= 10


def test_user_turns_are_progress_and_never_off_topic_or_junk():
    steps = [Step(0, "observation", "Hi, I want to return my camera.", tool="user")]
    for k in range(1, 12):
        steps.append(Step(2 * k - 1, "action", "", tool="respond", args={"content": f"Could you tell me detail {k}?"}))
        steps.append(Step(2 * k, "observation", f"Sure, detail {k} is this.", tool="user"))
    wd, ivs = run(DEFAULT_POLICY, steps)
    assert ivs == []
    classes = {wd.signals[s.index]["obs_class"] for s in steps if s.kind == "observation"}
    assert classes == {"user"}


def test_hint_message_is_concrete():
    _, ivs = run(FLAT, loop_run(5))
    step, hint = ivs[0]
    assert hint.tier == "hint"
    assert "step" in hint.message and hint.evidence["steps"]
    assert all(isinstance(s, int) for s in hint.evidence["steps"])
    rep = [iv for _, iv in ivs if iv.detector == "repetition"]
    assert rep and "'same query'" in rep[0].message and "at step 0" in rep[0].message
    redirect = next(iv for _, iv in ivs if iv.tier == "redirect")
    assert "'same query'" in redirect.message


def test_stop_needs_the_ladder_first():
    # Lots of stagnation but tiers without a redirect before stop -> the stop waits
    # for hint then (policy has no redirect) straight to stop only after the streak.
    p = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), stop_streak=3))
    _, ivs = run(p, loop_run(2))
    assert ivs == []
    _, ivs = run(p, loop_run(3))
    assert [iv.tier for _, iv in ivs] == ["stop"]


def test_cooldown_both_sides():
    # Ignoring off: an ignored intervention skips the cooldown (tested below).
    p0 = Policy(use_complexity=False, ladder=Ladder(cooldown=0, stop_streak=100, fast_futile=0, ignored_within=0))
    p2 = Policy(use_complexity=False, ladder=Ladder(cooldown=COOLDOWN, stop_streak=100, fast_futile=0,
                                                    ignored_within=0))
    _, ivs0 = run(p0, loop_run(4))
    _, ivs2 = run(p2, loop_run(4))
    gaps2 = [b - a for (a, _), (b, _) in zip(ivs2, ivs2[1:], strict=False)]
    assert all(g >= 2 * COOLDOWN for g in gaps2)  # 2 steps per turn
    assert len(ivs0) > len(ivs2)


def test_invalid_run_both_sides():
    assert INVALID_RUN == 2
    base = [act(0, "s", "alpha"), obs(1, "No results"), act(2, "s", "beta gamma"), obs(3, "Some fresh beta gamma fact")]
    _, ivs = run(FLAT, base)
    assert ivs == []  # one failed call: routine
    two = [act(0, "s", "alpha"), obs(1, "No results"), act(2, "s", "beta"), obs(3, "Invalid action!")]
    _, ivs = run(FLAT, two)
    assert [(s, iv.detector, iv.tier) for s, iv in ivs] == [(3, "observation", "hint")]
    assert ivs[0][1].evidence["scores"]["classes"] == ["empty", "error"]


def test_repetition_min_repeats_both_sides():
    assert REPETITION_MIN_REPEATS == 2
    page = "The Eiffel Tower is in Paris and is 330 metres tall."
    once = [act(0, "search", "eiffel"), obs(1, page), act(2, "search", "eiffel"), obs(3, page)]
    _, ivs = run(FLAT, once)
    assert ivs == []  # one return to a known page is navigation
    twice = [*once, act(4, "search", "eiffel"), obs(5, page)]
    _, ivs = run(FLAT, twice)
    assert [iv.detector for _, iv in ivs] == ["repetition"]
    assert ivs[0][1].evidence["steps"] == [2, 4, 5]
    # a repeat whose result failed triggers at the first repeat
    failed = [act(0, "search", "eiffel"), obs(1, page), act(2, "search", "eiffel"), obs(3, "No results")]
    _, ivs = run(FLAT, failed)
    assert [iv.detector for _, iv in ivs] == ["repetition"]


def test_reset_after_both_sides():
    p = Policy(use_complexity=False,
               ladder=Ladder(cooldown=0, stop_streak=100, stop_futile=100, stop_invalid=100, fast_futile=0))
    stuck = loop_run(4)
    wd, _ = run(p, stuck)
    assert wd.level >= 1
    for s in novel_turns(RESET_AFTER - 1, 100):
        wd.observe(s)
    assert wd.level >= 1
    for s in novel_turns(1, 200):
        wd.observe(s)
    assert wd.level == 0


def test_off_policy_computes_signals_but_never_intervenes():
    wd, ivs = run(OFF_POLICY, loop_run(40))
    assert ivs == []
    assert wd.signals[1]["obs_class"] == "empty"
    assert wd.signals[2]["similarity"] == 1.0 and wd.signals[2]["compared_step"] == 0
    assert "triggers" in wd.signals[79]


def test_hints_only_never_stops():
    _, ivs = run(HINTS_ONLY_POLICY, loop_run(60))
    assert ivs and all(iv.tier in ("hint", "redirect") for _, iv in ivs)


def test_detector_error_is_recorded_and_run_goes_on(monkeypatch):
    wd = Watchdog(FLAT)

    def boom(step):
        raise RuntimeError("kaput")

    monkeypatch.setattr(wd.repetition, "update", boom)
    for s in loop_run(30):
        wd.observe(s)
    assert wd.signals[0]["errors"]["repetition"] == "RuntimeError: kaput"
    assert wd.errors and wd.stopped  # the other detectors still stopped the loop


def test_own_intervention_steps_ignored_and_gaps_ok():
    steps = [
        act(3, "s", "a b"),
        Step(index=4, kind="intervention", text="hint"),
        obs(10, "fresh a b content"),
        act(50, "s", "c"),
    ]
    wd, _ = run(FLAT, steps)
    assert set(wd.signals) == {3, 4, 10, 50}
    assert wd.signals[4] == {}


def test_unknown_tools_and_bad_inputs():
    weird = [
        act(0, "??", None),
        obs(1, ""),
        act(2, "工具", "巴黎 tower"),
        obs(3, "\x00\xff" * 50_000),
        act(4, None, {"deep": [[["x"]]]}),
        obs(5, "巴黎的埃菲尔铁塔 Eiffel Tower " * 5000),
        Step(index=6, kind="final", text="done"),
    ]
    wd, _ = run(DEFAULT_POLICY, weird, goal="巴黎 Eiffel height")
    assert not wd.errors


def test_signals_for_badges():
    page = "The Eiffel Tower is in Paris."
    wd, _ = run(FLAT, [act(0, "search", "eiffel"), obs(1, page, status="ok")], goal="eiffel tower height")
    s = wd.signals[1]
    for key in ("status", "obs_class", "novelty", "progress", "stagnation", "coverage"):
        assert key in s
    assert s["progress"] == 1 and s["coverage"] > 0


# -- complexity --------------------------------------------------------------


def test_complexity_bounds_and_effect():
    assert estimate_complexity("") >= COMPLEXITY_MIN
    simple = estimate_complexity("capital of France")
    complex_ = estimate_complexity(
        "Which of the two bands, formed before 1990 and also signed to the same label, "
        "has more members and which is older, and compare both with the third band"
    )
    assert COMPLEXITY_MIN <= simple < 1.0 < complex_ <= COMPLEXITY_MAX
    wd_s = Watchdog(DEFAULT_POLICY, goal="capital of France")
    wd_c = Watchdog(DEFAULT_POLICY, goal="x and y and z both compare which of more")
    assert wd_s.stop_streak < wd_c.stop_streak  # widens tolerance, does not decide
    assert Watchdog(FLAT, goal="x and y and z both").stop_streak == STOP_STREAK


def test_windows_scale_is_ceiling():
    p = Policy(windows=Windows(stagnation=4))
    wd = Watchdog(p, goal="a and b and c and d both compare")
    assert wd.stagnation_k == math.ceil(4 * wd.complexity - 1e-9)


# -- an ignored intervention ---------------------------------------------------

# Only the ladder and the ignoring can act: every other stop ground is out of reach.
ESCALATE = Policy(use_complexity=False, ladder=Ladder(stop_streak=100, stop_futile=100, stop_invalid=100, fast_futile=0))


def test_an_ignored_hint_escalates_at_once_a_change_of_course_does_not():
    assert IGNORED_WITHIN == 1
    # Hint at the second failing call (step 3); the next call is the same one
    # again: the redirect comes at its result, inside the cooldown.
    wd, ivs = run(ESCALATE, loop_run(3))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (5, "redirect")]
    assert ivs[1][1].evidence["ignored"] == [3]
    assert "went on with the loop pointed out at step 3" in ivs[1][1].message
    # The other side: after the hint the model tries something else, which
    # fails too. The level stays where it was and the cooldown holds: the next
    # intervention waits for it, then is the redirect the ladder had reached.
    steps = loop_run(2) + [act(4, "search", "another query"), obs(5, "Nothing happens.", "search")]
    steps += [act(6, "search", "a third query"), obs(7, "Nothing happens.", "search")]
    wd, ivs = run(ESCALATE, steps)
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (7, "redirect")]
    assert "ignored" not in ivs[1][1].evidence
    # Judging off: the same loop waits for the cooldown like anything else.
    off = Policy(use_complexity=False, ladder=Ladder(stop_streak=100, stop_futile=100, stop_invalid=100, fast_futile=0,
                                                     ignored_within=0))
    _, ivs = run(off, loop_run(3))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint")]


def test_ignored_within_judges_only_the_next_calls():
    # One call away from the loop, then back to it: with IGNORED_WITHIN = 1 the
    # return is a new episode (no escalation at once); with 2 it is the hint ignored.
    steps = loop_run(2) + [act(4, "search", "another query"), obs(5, "Nothing happens.", "search")]
    steps += [act(6, "search", "same query"), obs(7, "Nothing happens.", "search")]
    patient = Ladder(cooldown=100, stop_streak=100, stop_futile=100, stop_invalid=100, fast_futile=0)
    _, ivs = run(Policy(use_complexity=False, ladder=patient), steps)
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint")]
    two = Policy(use_complexity=False, ladder=Ladder(**{**patient.__dict__, "ignored_within": 2}))
    _, ivs = run(two, steps)
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (7, "redirect")]


def test_ignored_stop_both_sides():
    # hint (3), ignored -> redirect (5), ignored -> the redirect again (7): two
    # ignored are not yet grounds. Ignored a third time -> stop (9).
    assert IGNORED_STOP == 3
    wd, ivs = run(ESCALATE, loop_run(4))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (5, "redirect"), (7, "redirect")] and not wd.stopped
    wd, ivs = run(ESCALATE, loop_run(5))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (5, "redirect"), (7, "redirect"), (9, "stop")]
    stop = ivs[-1][1]
    assert stop.evidence["threshold"] == {"name": "ladder.ignored_stop", "value": 3, "score": 3, "op": ">="}
    assert stop.evidence["ignored"] == [3, 5, 7]
    assert "steps 3, 5, 7 were each followed by the same loop" in stop.message
    # 2: the redirect ignored is the stop.
    p2 = Policy(use_complexity=False, ladder=Ladder(**{**ESCALATE.ladder.__dict__, "ignored_stop": 2}))
    _, ivs = run(p2, loop_run(4))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (5, "redirect"), (7, "stop")]
    # 0: never a ground on its own (and the other grounds are out of reach).
    p0 = Policy(use_complexity=False, ladder=Ladder(**{**ESCALATE.ladder.__dict__, "ignored_stop": 0}))
    wd, ivs = run(p0, loop_run(12))
    assert not wd.stopped and ivs[1][1].tier == "redirect"


def test_inside_the_cooldown_only_the_ignoring_grounds_a_stop():
    # Futile repeats (STOP_FUTILE = 2) are there at the fourth call, but the
    # redirect came one turn earlier: ignoring skips the wait only for itself.
    p = Policy(use_complexity=False, ladder=Ladder(stop_streak=100, stop_invalid=100, fast_futile=0))
    wd, ivs = run(p, loop_run(4))
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint"), (5, "redirect"), (7, "redirect")] and wd.futile >= 2
    assert not wd.stopped


def test_a_confirmed_value_or_progress_is_not_ignoring():
    # The value was first returned by another call: checking it again after the
    # hint is confirmation, not the loop going on (STOP_FUTILE's comment).
    steps = count_loop(3, 4)
    wd, ivs = run(ESCALATE, steps)
    assert all("ignored" not in iv.evidence for _, iv in ivs)
    # A new result after the hint ends the judging: the loop's call made again
    # afterwards is a new episode.
    steps = loop_run(2) + [act(4, "search", "other topic"), obs(5, "A fresh page about another topic at last.")]
    steps += [act(6, "search", "same query"), obs(7, "Nothing happens.", "search")]
    wd, ivs = run(ESCALATE, steps)
    assert [(s, iv.tier) for s, iv in ivs] == [(3, "hint")] and wd._watch is None


def test_the_loop_memory_is_bounded():
    # The loop an intervention is about is the latest turns without progress,
    # at most windows.repetition of them: a long stall costs no more per step.
    steps = [s for k in range(50) for s in (act(2 * k, "search", f"q{k}"), obs(2 * k + 1, "Nothing happens."))]
    wd, _ = run(Policy(use_complexity=False, ladder=Ladder(tiers=("hint", "redirect"))), steps)
    assert len(wd._loop) == wd.policy.windows.repetition


@pytest.mark.parametrize("field", ["ignored_within", "ignored_stop"])
def test_ignoring_fields_validate(field):
    assert Policy.from_dict({"ladder": {field: 0}}).ladder == Ladder(**{field: 0})
    with pytest.raises(PolicyError) as exc:
        Policy.from_dict({"ladder": {field: -1}})
    assert exc.value.field == f"ladder.{field}"


def _detour_loop() -> list[Step]:
    """search[x] fails, a detour that finds something, search[x] again, twice."""
    steps: list[Step] = []
    i = 0
    for k in range(3):
        steps += [act(i, "search", "same query"), obs(i + 1, "Could not find [same query].", "search")]
        steps += [act(i + 2, "lookup", f"other{k}"), obs(i + 3, f"other{k} is a fact about item{k} value{k}", "lookup")]
        i += 4
    return steps


def test_stop_repeat_both_sides():
    # Off by default: a polled status repeats legitimately.
    assert Ladder().stop_repeat == 0
    quiet = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), fast_futile=0, stop_futile=100,
                                                       stop_invalid=100, stop_streak=100))
    wd, ivs = run(quiet, _detour_loop())
    assert ivs == [] and not wd.stopped
    # The same call a third time anywhere in the run, detours between, is stopped before it runs.
    on = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), fast_futile=0, stop_futile=100,
                                                    stop_invalid=100, stop_streak=100, stop_repeat=3))
    wd, ivs = run(on, _detour_loop())
    assert [s for s, _ in ivs] == [8] and wd.stopped
    stop = ivs[-1][1]
    assert stop.evidence["threshold"] == {"name": "ladder.stop_repeat", "value": 3, "score": 3, "op": ">="}
    assert "3 times in this run (first at step 0)" in stop.message
    # With a hint tier, no stop before a hint was given since the call's first time.
    hinted = Policy(use_complexity=False, ladder=Ladder(tiers=("hint", "stop"), cooldown=100, fast_futile=0,
                                                        stop_futile=100, stop_invalid=100, stop_streak=100,
                                                        stop_repeat=3))
    wd, ivs = run(hinted, _detour_loop())
    assert all(iv.tier != "stop" or iv.evidence["threshold"]["name"] == "ladder.stop_repeat" for _, iv in ivs)
    assert not any(iv.tier == "stop" for _, iv in ivs) or any(iv.tier == "hint" for _, iv in ivs)


def test_stop_repeat_survives_a_snapshot():
    on = Policy(use_complexity=False, ladder=Ladder(tiers=("stop",), fast_futile=0, stop_futile=100,
                                                    stop_invalid=100, stop_streak=100, stop_repeat=3))
    steps = _detour_loop()
    wd = Watchdog(on)
    for s in steps[:6]:
        wd.observe(s)
    wd = Watchdog.restore(wd.snapshot(), on)
    ivs = [(s.index, iv) for s in steps[6:] if (iv := wd.observe(s)) is not None]
    assert [s for s, _ in ivs] == [8]


def _same_call_in_a_row(times: int) -> list:
    steps, i = [], 0
    for _ in range(times):
        steps += [act(i, "lookup", "item0"), obs(i + 1, "Could not find item0.", "lookup")]
        i += 2
    return steps


def test_stop_in_a_row_both_sides():
    assert Ladder().stop_in_a_row == 0
    ladder = {"tiers": ("stop",), "fast_futile": 0, "stop_futile": 100, "stop_invalid": 100, "stop_streak": 100}
    on = Policy(use_complexity=False, ladder=Ladder(**ladder, stop_in_a_row=3))
    # Three times in a row: stopped at the third, before it runs.
    wd, ivs = run(on, _same_call_in_a_row(3))
    assert [s for s, _ in ivs] == [4] and wd.stopped
    stop = ivs[-1][1]
    assert stop.evidence["threshold"] == {"name": "ladder.stop_in_a_row", "value": 3, "score": 3, "op": ">="}
    assert "3 times in a row (first at step 0)" in stop.message
    # The same call three times with other calls between is not in a row.
    wd, ivs = run(on, _detour_loop())
    assert ivs == [] and not wd.stopped


def test_stop_in_a_row_survives_a_snapshot():
    ladder = {"tiers": ("stop",), "fast_futile": 0, "stop_futile": 100, "stop_invalid": 100, "stop_streak": 100}
    on = Policy(use_complexity=False, ladder=Ladder(**ladder, stop_in_a_row=3))
    steps = _same_call_in_a_row(3)
    wd = Watchdog(on)
    for s in steps[:3]:
        wd.observe(s)
    wd = Watchdog.restore(wd.snapshot(), on)
    ivs = [(s.index, iv) for s in steps[3:] if (iv := wd.observe(s)) is not None]
    assert [s for s, _ in ivs] == [4]
