"""unconfirmed_success: a household text agent and a tool-calling customer-service agent."""

from __future__ import annotations

from tests.tracing.helpers import Run


def _patterns(run: Run, pattern: str = "unconfirmed_success"):
    return [b.step for b in run.report().breaks if b.pattern == pattern]


def test_a_command_that_did_nothing_reported_done():
    run = (Run().command("put potato 1 in microwave 1", tool="put").result("put", "Nothing happens.")
           .thought("Now I put the potato 1 in microwave 1."))
    assert _patterns(run) == [2]


def test_a_failed_command_acknowledged():
    run = (Run().command("put potato 1 in microwave 1", tool="put").result("put", "Nothing happens.")
           .thought("Nothing happens, so I need to open the microwave 1 first."))
    assert _patterns(run) == []


def test_a_refused_change_reported_done():
    run = (Run().user("Please change the payment method of order #W1234567 to my Visa.")
           .call("modify_payment", {"order_id": "#W1234567", "payment_method_id": "credit_card_1"})
           .result("modify_payment", "Error: payment method not allowed for this order")
           .reply("Your payment method has been changed to the Visa."))
    assert _patterns(run) == [3]


def test_a_change_that_worked_reported_done():
    run = (Run().user("Please change the payment method of order #W1234567 to my Visa.")
           .call("modify_payment", {"order_id": "#W1234567", "payment_method_id": "credit_card_1"})
           .result("modify_payment", {"order_id": "#W1234567", "payment_method_id": "credit_card_1"})
           .reply("Your payment method has been changed to the Visa."))
    assert _patterns(run) == []


def test_a_message_sent_by_a_call_that_returns_nothing_reported_sent():
    # Messaging and file APIs return None (HTTP 204) when the write worked:
    # an empty answer to a write is its success, as for mkdir.
    run = (Run().user("Tell Alice in #general that the build is green.")
           .call("send_channel_message", {"channel": "general", "body": "The build is green."})
           .result("send_channel_message", "None")
           .reply("I have sent the message to #general."))
    assert _patterns(run) == []


def test_a_record_deleted_over_rest_with_an_empty_body_reported_deleted():
    run = (Run().user("Delete the draft invoice INV-2231.")
           .call("delete_invoice", {"invoice_id": "INV-2231"})
           .result("delete_invoice", "")
           .reply("Invoice INV-2231 has been deleted."))
    assert _patterns(run) == []


def test_a_lookup_that_returns_nothing_is_still_nothing_found():
    run = (Run().user("What is the status of order #W7654321?")
           .call("get_order_details", {"order_id": "#W7654321"})
           .result("get_order_details", "null")
           .reply("Order #W7654321 has been delivered."))
    assert _patterns(run) == [3]
