"""phantom_call: a tool-calling customer-service agent and a household text agent."""

from __future__ import annotations

from tests.tracing.helpers import Run

CONTEXT = {"tools": [{"name": "cancel_order"}, {"name": "get_order_details"}]}
ORDER = {"order_id": "#W1234567", "status": "pending"}


def _phantoms(run: Run, context=None):
    return [b.step for b in run.report(context=context).breaks if b.pattern == "phantom_call"]


def test_a_cancellation_reported_with_no_cancel_call():
    run = (Run().user("Please cancel order #W1234567.")
           .call("get_order_details", {"order_id": "#W1234567"}).result("get_order_details", ORDER)
           .reply("I've cancelled your order #W1234567."))
    assert _phantoms(run, CONTEXT) == [3]


def test_a_cancellation_reported_after_the_cancel_call():
    run = (Run().user("Please cancel order #W1234567.")
           .call("cancel_order", {"order_id": "#W1234567"})
           .result("cancel_order", {"order_id": "#W1234567", "status": "cancelled"})
           .reply("I've cancelled your order #W1234567."))
    assert _phantoms(run, CONTEXT) == []


def test_now_i_take_with_no_take_made():
    run = (Run().command("go to countertop 1", tool="go to")
           .result("go to", "On the countertop 1, you see a knife 1.")
           .command("take knife 1 from countertop 1", tool="take")
           .result("take", "You pick up the knife 1 from the countertop 1.")
           .command("go to sinkbasin 1", tool="go to").result("go to", "On the sinkbasin 1, you see nothing.")
           .thought("Now I clean the knife 1."))
    assert _phantoms(run, {"tools": [{"name": "clean"}, {"name": "take"}, {"name": "go to"}]}) == [6]


def test_now_i_take_right_after_the_take():
    run = (Run().command("go to countertop 1", tool="go to")
           .result("go to", "On the countertop 1, you see a knife 1.")
           .command("take knife 1 from countertop 1", tool="take")
           .result("take", "You pick up the knife 1 from the countertop 1.")
           .thought("Now I take the knife 1."))
    assert _phantoms(run, {"tools": [{"name": "take"}, {"name": "go to"}]}) == []
