"""wrong_relation: a text ReAct agent over search, in English and in Chinese."""

from __future__ import annotations

from tests.tracing.helpers import Run

PAGE = "Tom Reed grew up in Mirefield. He was born in Calder Bay in 1950."
ZH_PAGE = "李明在青石镇长大，后来他出生于白沙市的说法被证实。"


def _relation(run: Run, task: str):
    return [b.step for b in run.report(task=task).breaks if b.pattern == "wrong_relation"]


def _tom(answer: str):
    return Run().call("Search", "Tom Reed").result("Search", PAGE).thought(f"So the answer is {answer}.").final(answer)


def test_the_town_he_grew_up_in_for_where_he_was_born():
    assert _relation(_tom("Mirefield"), "Where was Tom Reed born?") == [2]


def test_the_town_he_was_born_in():
    assert _relation(_tom("Calder Bay"), "Where was Tom Reed born?") == []


def _li(answer: str):
    return Run().call("Search", "李明").result("Search", ZH_PAGE).thought(f"所以答案是{answer}。").final(answer)


def test_chinese_the_town_he_grew_up_in():
    assert _relation(_li("青石镇"), "李明出生于哪个城市？") == [2]


def test_chinese_the_town_he_was_born_in():
    assert _relation(_li("白沙市"), "李明出生于哪个城市？") == []
