from __future__ import annotations

from tracing.core.coverage import answer_coverage, core_facts


def test_a_figure_read_from_an_observation_is_covered():
    assert answer_coverage("41.7 million pounds", ["Reported net profit: 41.7 million pounds."]) == 1.0


def test_a_figure_no_observation_holds_is_not():
    assert answer_coverage("43.2 million pounds", ["Reported net profit: 41.7 million pounds."]) == 0.0


def test_coverage_is_the_share_of_facts():
    answer = "Adjusted 52.3 and reported 41.7"
    assert len(core_facts(answer)) == 2
    assert answer_coverage(answer, ["Reported net profit: 41.7 million."]) == 0.5


def test_chinese_names_count_as_facts():
    assert answer_coverage("白沙市", ["作家林远于1950年出生于白沙市。"]) == 1.0
    assert answer_coverage("白沙市", ["没有结果"]) == 0.0


def test_an_answer_stating_nothing_has_no_coverage():
    assert answer_coverage("I could not find the answer.", ["anything"]) is None
    assert answer_coverage(None, []) is None
    assert answer_coverage("", []) is None
    assert answer_coverage("未能找到答案。", []) is None
    assert answer_coverage("No answer: stopped by the watchdog (repetition): 3 times", []) is None
    assert answer_coverage("No such report was found.", []) is None


def test_the_question_is_not_evidence():
    # Only observations back a fact: no observation, nothing covered.
    assert answer_coverage("1284 metres", []) == 0.0
