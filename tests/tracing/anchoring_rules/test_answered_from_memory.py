"""answered_from_memory (a finding): a text ReAct agent over search, in English and in Chinese."""

from __future__ import annotations

from tests.tracing.helpers import Run

PAGE = "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris."


def _memory(run: Run, task: str):
    return [f.step for f in run.report(task=task).findings if f.pattern == "answered_from_memory"]


def test_an_answer_the_model_knew():
    run = (Run().call("Search", "Eiffel Tower").result("Search", PAGE)
           .thought("The tower was designed by Gustave Eiffel.").final("Gustave Eiffel"))
    assert _memory(run, "Whose company designed the Eiffel Tower?") == [2]


def test_an_answer_read_from_the_page():
    run = (Run().call("Search", "Eiffel Tower").result("Search", PAGE)
           .thought("The tower stands on the Champ de Mars.").final("Champ de Mars"))
    assert _memory(run, "Where does the Eiffel Tower stand?") == []


ZH_PAGE = "埃菲尔铁塔位于巴黎战神广场，是一座铁制镂空塔。"


def test_chinese_an_answer_the_model_knew():
    run = (Run().call("Search", "埃菲尔铁塔").result("Search", ZH_PAGE)
           .thought("铁塔由古斯塔夫设计。").final("古斯塔夫"))
    assert _memory(run, "埃菲尔铁塔是谁设计的？") == [2]


def test_chinese_an_answer_read_from_the_page():
    run = (Run().call("Search", "埃菲尔铁塔").result("Search", ZH_PAGE)
           .thought("铁塔位于战神广场。").final("战神广场"))
    assert _memory(run, "埃菲尔铁塔在哪里？") == []
