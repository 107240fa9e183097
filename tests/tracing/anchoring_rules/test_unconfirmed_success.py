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


# "Now I find X" says what the latest result shows; "I have found X" reports
# the run so far, so X counts as shown when any result of the run held it.
def test_now_i_find_what_the_latest_result_does_not_show():
    run = (Run().command("go to countertop 2", tool="go to")
           .result("go to", "On the countertop 2, you see a apple 1, and a bowl 1.")
           .command("go to countertop 1", tool="go to")
           .result("go to", "On the countertop 1, you see a fork 1, and a spoon 2.")
           .thought("Now I find an apple 1. Next, I need to take it."))
    assert _patterns(run) == [4]


def test_a_report_of_what_an_earlier_result_found():
    run = (Run().user("Find the channel with the fewest messages and add Alice to it.")
           .call("read_channel_messages", {"channel": "random"})
           .result("read_channel_messages", "- body: Lunch at Miznon was great\n  sender: Bob")
           .call("get_users_in_channel", {"channel": "general"})
           .result("get_users_in_channel", "- Alice\n- Bob")
           .thought("I have found that Bob had lunch at Miznon, in the random channel."))
    assert _patterns(run) == []


def test_a_report_of_something_no_result_held():
    run = (Run().user("Find a hotel in Paris rated above 4.5.")
           .call("get_all_hotels_in_city", {"city": "Paris"})
           .result("get_all_hotels_in_city", "Hotel Names: Le Marais Boutique\nGood Night Hotel")
           .thought("I have found the Montmartre Suites hotel, rated 4.8."))
    assert _patterns(run) == [3]


def test_an_empty_read_read_as_empty():
    # read_channel_messages(External_0) -> []: "External_0 has 0 messages" is
    # what the emptiness says, made only of what was known before.
    run = (Run().user("Find the channel with the fewest messages.")
           .call("get_channels", {})
           .result("get_channels", "- general\n- External_0")
           .call("read_channel_messages", {"channel": "External_0"})
           .result("read_channel_messages", [])
           .thought("The channel External_0 has 0 messages."))
    assert _patterns(run) == []


def test_an_empty_query_read_as_holding_rows():
    run = (Run().run("sql", "SELECT name FROM singer WHERE year = 2014")
           .result("sql", [])
           .thought("The output contains the names of all the singers in concerts in year 2014."))
    assert _patterns(run) != []


def test_a_failure_explained_is_not_a_success_claimed():
    # Office agent and shop agent: "incorrect" owns up to the failure it explains.
    run = (Run().user("Delete the email with id 00000211.")
           .call("email.delete_email", {"email_id": "00000211"})
           .result("email.delete_email", "Email not found.")
           .thought("The email ID provided is incorrect or the email has already been deleted."))
    assert _patterns(run) == []
