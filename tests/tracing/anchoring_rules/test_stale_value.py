"""stale_value: a tool-calling retail agent and a telecom agent over JSON records."""

from __future__ import annotations

from tests.tracing.helpers import Run


def _stale(run: Run):
    return [b.step for b in run.report().breaks if b.pattern == "stale_value"]


def _order(said: str):
    return (Run().call("get_order_details", {"order_id": "#W1234567"})
            .result("get_order_details", {"order_id": "#W1234567", "status": "pending", "total": 52.01})
            .call("cancel_order", {"order_id": "#W1234567"})
            .result("cancel_order", {"order_id": "#W1234567", "status": "cancelled", "total": 52.01})
            .reply(said))


def test_a_status_from_before_the_cancellation():
    assert _stale(_order("Your order #W1234567 is still pending.")) == [4]


def test_the_status_after_the_cancellation():
    assert _stale(_order("Your order #W1234567 is now cancelled.")) == []


def _line(said: str):
    return (Run().call("get_line_details", {"line_id": "L1001"})
            .result("get_line_details", {"line_id": "L1001", "status": "active", "plan": "basic"})
            .call("suspend_line", {"line_id": "L1001"})
            .result("suspend_line", {"line_id": "L1001", "status": "suspended", "plan": "basic"})
            .reply(said))


def test_a_line_status_from_before_the_suspension():
    assert _stale(_line("Your line L1001 is active.")) == [4]


def test_the_line_status_after_the_suspension():
    assert _stale(_line("Your line L1001 is suspended now.")) == []
