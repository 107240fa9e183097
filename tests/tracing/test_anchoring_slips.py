"""A lapse the next result refutes and the agent lets go is a slip, not the anchor break."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tracing.helpers import Run
from tracing.core.anchoring.rules.slip import caught
from tracing.core.steps import Step

ROOM = ("You are in the middle of a room. Looking quickly around you, you see a countertop 3, a countertop 2, "
        "a drawer 1, a fridge 1, and a microwave 1. Your task is to: ")
TASK = ROOM + "find an apple, heat it with microwave, then put it in fridge."
COUNTER = "On the countertop 3, you see a bread 2, a butterknife 1, a egg 1, and a vase 3."


def _hallucinated_apple() -> Run:
    """The agent "finds" an apple that the countertop does not hold and tries to take it."""
    return (
        Run()
        .command("go to countertop 3", "go to").result("go to", COUNTER)
        .thought("Now I find an apple (1). Next, I need to take it.")
        .command("take apple 1 from countertop 3", "take").result("take", "Nothing happens.")
    )


def test_a_lapse_refuted_at_once_and_dropped_is_a_slip():
    rep = (
        _hallucinated_apple()
        .thought("I need to check the drawer.")
        .command("go to drawer 1", "go to").result("go to", "The drawer 1 is closed.")
        .report(TASK)
    )
    assert rep.first_break is None
    [slip] = [f for f in rep.findings if f.pattern == "slip"]
    assert slip.step == 2
    assert slip.evidence["refuted_at"] == 4 and slip.evidence["call_step"] == 3
    assert slip.evidence["lapse"] in ("unobserved_argument", "unconfirmed_success")
    assert "step 4" in slip.reason and "apple 1" in slip.reason
    assert rep.to_dict()["anchor_findings"][0]["pattern"] == "slip"


def test_asserting_it_again_keeps_the_break():
    rep = (
        _hallucinated_apple()
        .thought("Now I take an apple (1). Next, I need to heat it.")
        .command("go to microwave 1", "go to").result("go to", "The microwave 1 is closed.")
        .report(TASK)
    )
    assert rep.first_break == 2


def test_acting_on_it_again_keeps_the_break():
    rep = (
        _hallucinated_apple()
        .thought("The apple 1 must be there. I will try again.")
        .command("take apple 1 from countertop 3", "take").result("take", "Nothing happens.")
        .report(TASK)
    )
    assert rep.first_break == 2
    assert not [f for f in rep.findings if f.pattern == "slip"]


def test_once_a_result_shows_the_value_it_may_be_used():
    # The lapse was of place, not of object: the knife is on the other counter.
    rep = (
        Run()
        .command("go to countertop 2", "go to").result("go to", "On the countertop 2, you see a fork 1, and a knife 1.")
        .command("go to countertop 3", "go to").result("go to", COUNTER)
        .thought("Now I find a knife (1). Next, I need to take it.")
        .command("take knife 1 from countertop 2", "take").result("take", "Nothing happens.")
        .command("go to countertop 2", "go to").result("go to", "On the countertop 2, you see a fork 1, and a knife 1.")
        .command("take knife 1 from countertop 2", "take").result("take", "You pick up the knife 1 from the countertop 2.")
        .report(ROOM + "put a clean knife in drawer.")
    )
    assert rep.first_break is None
    assert [f.step for f in rep.findings if f.pattern == "slip"] == [4]


def test_a_lapse_no_call_acts_on_stays_a_break():
    # Nothing refuted the claim: the agent walked away from it without a test.
    rep = (
        Run()
        .command("go to countertop 2", "go to").result("go to", "On the countertop 2, you see a fork 1, and a knife 1.")
        .command("go to countertop 3", "go to").result("go to", COUNTER)
        .thought("Now I find a knife (1). Next, I need to take it.")
        .command("go to drawer 1", "go to").result("go to", "The drawer 1 is closed.")
        .report(ROOM + "put a clean knife in drawer.")
    )
    assert rep.first_break == 4


def test_a_requery_is_never_a_slip():
    # Its own failure is the lapse.
    rep = (
        Run()
        .command("open fridge 1", "open").result("open", "Nothing happens.")
        .thought("The fridge 1 is closed. I need to open it.")
        .command("open fridge 1", "open").result("open", "Nothing happens.")
        .command("go to countertop 1", "go to").result("go to", "On the countertop 1, you see a mug 2.")
        .report(TASK)
    )
    assert rep.first_break is not None
    assert rep.evidence["pattern"] == "requery"


def test_a_made_up_id_the_tool_rejects_and_the_agent_drops_is_a_slip():
    rep = (
        Run()
        .user("Hi, I want to return the keyboard from my last order.")
        .call("get_order_details", {"order_id": "#W0000001"})
        .result("get_order_details", "Error: order not found")
        .reply("I couldn't find that order. Could you give me your email so I can look up your orders?")
        .user("Sure, it's mei.kovacs@example.com")
        .call("find_user_id_by_email", {"email": "mei.kovacs@example.com"})
        .result("find_user_id_by_email", "mei_kovacs_8020")
        .report("Return the keyboard.")
    )
    assert rep.first_break is None
    assert [f.evidence["lapse"] for f in rep.findings if f.pattern == "slip"] == ["unobserved_argument"]


def test_a_later_break_becomes_the_first():
    rep = (
        _hallucinated_apple()
        .command("go to fridge 1", "go to").result("go to", "The fridge 1 is closed.")
        .command("go to fridge 1", "go to").result("go to", "Nothing happens.")
        .command("go to fridge 1", "go to").result("go to", "Nothing happens.")
        .report(TASK)
    )
    slips = [f.step for f in rep.findings if f.pattern == "slip"]
    assert slips == [2]
    assert rep.first_break is not None and rep.first_break > 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["thought", "action", "observation", "final"]), st.text(max_size=80),
                       st.sampled_from([None, "take", "bash", "get_order_details"])), max_size=12),
    st.integers(min_value=-2, max_value=14),
    st.dictionaries(st.sampled_from(["unseen", "missing", "other"]),
                    st.one_of(st.none(), st.text(max_size=10), st.lists(st.one_of(st.text(max_size=10), st.integers())))),
)
def test_junk_never_crashes_the_slip_check(items, at, evidence):
    steps = [Step(index=i, kind=k, text=t, tool=tool, args=t if k == "action" else None)
             for i, (k, t, tool) in enumerate(items)]
    for pattern in ("unobserved_argument", "unconfirmed_success", "requery"):
        where = caught(steps, pattern, at, evidence, lambda result, call: True, lambda text: [text])
        assert where is None or where["refuted_at"] > where["call_step"] >= at


def test_a_run_that_never_gets_a_call_to_work_again_keeps_the_break():
    rep = (
        _hallucinated_apple()
        .command("go to diningtable 1", "go to").result("go to", "Nothing happens.")
        .command("go to sofa 1", "go to").result("go to", "Nothing happens.")
        .report(TASK)
    )
    assert rep.first_break == 2
    assert not [f for f in rep.findings if f.pattern == "slip"]


def test_guesses_refuted_in_turn_then_a_call_that_works_are_exploration():
    rep = (
        Run()
        .command("go to diningtable 1", "go to").result("go to", "Nothing happens.")
        .command("go to diningtable 2", "go to").result("go to", "Nothing happens.")
        .command("go to countertop 2", "go to").result("go to", "On the countertop 2, you see a fork 1.")
        .report(TASK)
    )
    assert rep.first_break is None
    assert [f.step for f in rep.findings if f.pattern == "slip"] == [0, 2]
