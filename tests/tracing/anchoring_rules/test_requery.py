"""requery: a text ReAct agent over search and an ALFWorld-style shell of commands."""

from __future__ import annotations

from tests.tracing.helpers import Run

PAGE = "Wang Guowei (1877-1927) was a Chinese scholar, born in Haiyan, Zhejiang."


def _requeries(run: Run):
    return [b.step for b in run.report().breaks if b.pattern == "requery"]


def test_search_asked_again():
    run = (Run().call("Search", "Wang Guowei").result("Search", PAGE).thought("Wang Guowei was born in Haiyan.")
           .call("Search", "wang guowei").result("Search", PAGE))
    assert _requeries(run) == [3]


def test_a_new_search_is_no_requery():
    run = (Run().call("Search", "Wang Guowei").result("Search", PAGE).thought("Now his teacher.")
           .call("Search", "Luo Zhenyu").result("Search", "Luo Zhenyu was a Chinese scholar and antiquarian."))
    assert _requeries(run) == []


def test_a_failed_command_repeated():
    run = (Run().command("put potato 1 in microwave 1").result("put", "Nothing happens.")
           .thought("I need to put potato in microwave.").command("put potato 1 in microwave 1")
           .result("put", "Nothing happens."))
    assert _requeries(run) == [3]


def test_the_same_command_after_the_world_changed():
    room = "On the diningtable 1, you see a lettuce 1 and a mug 1."
    run = (Run().command("go to diningtable 1", tool="go to").result("go to", room)
           .command("take mug 1 from diningtable 1", tool="take").result("take", "You pick up the mug 1.")
           .command("go to diningtable 1", tool="go to").result("go to", room))
    assert _requeries(run) == []
