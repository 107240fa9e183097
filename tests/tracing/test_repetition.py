from __future__ import annotations

from tests.tracing.helpers import act, obs
from tracing.core.detectors.repetition import (
    REPETITION_SIMILARITY,
    REPETITION_WINDOW,
    RepetitionDetector,
    scan,
)


def test_exact_repeat_flags_and_names_compared_step():
    sigs = scan([act(1, "Search", "Eiffel Tower"), obs(2, "x"), act(3, "search", "the eiffel tower!")])
    assert sigs[0].compared_step is None and not sigs[0].flag
    assert sigs[1].flag and sigs[1].similarity == 1.0 and sigs[1].compared_step == 1


def test_similarity_threshold_both_sides():
    # {a b c d e} vs {a b c d}: 0.8 exactly -> flagged (>=); {a b c d e} vs {a b c}: 0.6 -> not.
    det = RepetitionDetector()
    det.update(act(0, "t", "alpha beta gamma delta epsilon"))
    at = det.update(act(1, "t", "alpha beta gamma delta"))
    assert at.similarity == REPETITION_SIMILARITY == 0.8 and at.flag
    det2 = RepetitionDetector()
    det2.update(act(0, "t", "alpha beta gamma delta epsilon"))
    below = det2.update(act(1, "t", "alpha beta gamma"))
    assert below.similarity < REPETITION_SIMILARITY and not below.flag


def test_window_both_sides():
    # The first call is inside the window when exactly W other calls follow it... minus one.
    steps = [act(0, "t", "target query")]
    steps += [act(i, "t", f"other{i} words{i}") for i in range(1, REPETITION_WINDOW)]
    inside = scan([*steps, act(99, "t", "target query")])
    assert inside[-1].flag and inside[-1].compared_step == 0
    steps.append(act(REPETITION_WINDOW, "t", "yet another"))
    outside = scan([*steps, act(99, "t", "target query")])
    assert not outside[-1].flag


def test_same_tool_only_and_comes_back_after_other_tools():
    sigs = scan(
        [act(0, "search", "paris"), act(1, "lookup", "paris"), act(2, "calc", "1+1"), act(3, "search", "Paris")]
    )
    assert not sigs[1].flag  # other tool
    assert sigs[3].flag and sigs[3].compared_step == 0


def test_json_args_by_value():
    sigs = scan([act(0, "search", {"q": "Eiffel Tower", "k": 3}), act(1, "search", '{"k": 3, "q": "eiffel  tower"}')])
    assert sigs[1].flag


def test_bad_args_never_raise():
    weird = [None, "", "x" * 100_000, "\x00\xff\x01binary\ufffd", "Paris 巴黎的人口 population", {"a": [None]}]
    sigs = scan([act(i, "weird-tool", a) for i, a in enumerate(weird)])
    assert len(sigs) == len(weird)


def test_untooled_action_uses_text():
    det = RepetitionDetector()
    det.update(act(0, None, None, text="Search[foo bar]"))
    assert det.update(act(1, None, None, text="search[Foo Bar]")).flag


def test_gaps_in_indices():
    sigs = scan([act(5, "t", "q r"), act(50, "t", "q r")])
    assert sigs[1].compared_step == 5
