"""Anchoring on tool-calling dialogues, code and shell/SQL agents (issue 11)."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.eval_data import eval_runs
from tests.tracing.helpers import Run, report_all
from tracing.core.steps import Step, read_jsonl

ORDER = {"order_id": "#W1", "status": "pending", "items": [{"name": "Camera", "item_id": "11", "price": 375.0}],
         "payment_history": [{"amount": 375.0, "payment_method_id": "credit_card_1"}]}


# --- dialogues ---------------------------------------------------------------


def test_a_dialogue_of_pleasantries_and_looked_up_values_has_no_break():
    run = (
        Run().user("Hi, I want to return my camera. My order is #W1.")
        .reply("Thank you! I'd be happy to help with that.")
        .call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
        .reply("I found your order #W1 with the Camera for $375.00, which is still pending.")
        .user("I'll check and get back to you.")
        .reply("Thanks, have a great day!")
    )
    assert run.report().first_break is None


def test_arithmetic_over_evidence_is_grounded():
    run = (
        Run().call("get_order_details", {"order_id": "#W1"})
        .result("get_order_details", {"order_id": "#W1", "total": 375, "discount": 128})
        .thought("The total is 375 and the discount 128, so 375 - 128 = 247 is due.")
    )
    assert run.report().first_break is None
    # The same number without the working is still backed by the two amounts
    # only when written with decimals (prices); a bare 247 must show its sum.
    bad = (
        Run().call("get_order_details", {"order_id": "#W1"})
        .result("get_order_details", {"order_id": "#W1", "total": 375, "discount": 128})
        .thought("So 249 is due.")
    )
    assert bad.report().first_break == 2


def test_a_city_spelt_out_from_its_airport_code_is_grounded():
    run = (
        Run().call("get_reservation_details", {"reservation_id": "ZFA04Y"})
        .result("get_reservation_details", {"reservation_id": "ZFA04Y", "origin": "ATL", "destination": "PHL"})
        .reply("Your flight goes from Atlanta to Philadelphia.")
    )
    assert run.report().first_break is None


def test_context_policy_is_evidence():
    context = {"system": "Gold members get 3 free checked bags.", "tools": [{"name": "book_reservation"}]}
    run = Run().user("How many free bags do I get? I am a gold member.").reply("As a Gold member you get 3 free bags.")
    assert run.report(context=context).first_break is None


def test_success_claimed_after_an_error_result():
    run = (
        Run().user("Cancel order #W1 please.")
        .call("cancel_pending_order", {"order_id": "#W1"}).result("cancel_pending_order", "Error: order not found")
        .reply("Your order #W1 has been cancelled successfully.")
    )
    rep = run.report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unconfirmed_success"
    assert "step 2" in rep.reason and "step 3" in rep.reason


def test_a_completed_action_with_no_call_is_a_phantom_call():
    run = (
        Run().user("Please cancel order #W1.")
        .call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
        .user("Yes, go ahead.")
        .reply("Your order #W1 has been cancelled.")
        .call("cancel_pending_order", {"order_id": "#W2"}).result("cancel_pending_order", {"order_id": "#W2"})
    )
    rep = run.report()
    assert rep.first_break == 4 and rep.evidence["pattern"] == "phantom_call"
    assert "cancel_pending_order" in rep.reason


def test_the_user_reporting_the_action_backs_the_agents_relay():
    run = (
        Run().user("My phone shows airplane mode.").reply("Please turn off Airplane Mode.")
        .user("Okay, I turned off Airplane Mode.").reply("Great, Airplane Mode is now turned off.")
    )
    assert run.report().first_break is None


def test_a_value_from_another_record_is_a_wrong_record():
    other = {"order_id": "#W2", "status": "delivered", "items": [{"name": "Puzzle", "item_id": "22", "price": 52.01}]}
    run = (
        Run().call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
        .call("get_order_details", {"order_id": "#W2"}).result("get_order_details", other)
        .reply("Order #W1 has status delivered.")
    )
    rep = run.report()
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record"
    assert "#w2" in rep.reason.lower()


def test_an_exchange_is_judged_on_what_it_is_exchanged_for():
    product = {"name": "Wireless Earbuds", "variants": {
        "111": {"item_id": "111", "options": {"water resistance": "IPX7"}, "price": 258.97},
        "222": {"item_id": "222", "options": {"water resistance": "IPX4"}, "price": 232.49},
        "333": {"item_id": "333", "options": {"water resistance": "IPX4"}, "price": 91.78}}}
    run = Run().call("get_product_details", {"product_id": "9"}).result("get_product_details", product)
    rep = run.reply("You want to exchange the earbuds with IPX7 (item ID: 111, price: $258.97) for the earbuds "
                    "with IPX4 (item ID: 222, price: $91.78).").report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record"


def test_a_value_from_before_an_update_is_stale():
    cancelled = dict(ORDER, status="cancelled")
    run = (
        Run().call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
        .call("cancel_pending_order", {"order_id": "#W1"}).result("cancel_pending_order", cancelled)
        .reply("Your order #W1 is still pending.")
    )
    rep = run.report()
    assert rep.first_break == 4 and rep.evidence["pattern"] == "stale_value"
    # Naming the old state on purpose, or the new one, is fine.
    ok = Run()
    ok.steps = run.steps[:4]
    assert ok.reply("Your order #W1 was pending and is now cancelled.").report().first_break is None


EARBUDS = {"name": "Wireless Earbuds", "product_id": "9924732112", "variants": {
    "111": {"item_id": "111", "options": {"color": "blue", "battery life": "8 hours", "water resistance": "IPX4"},
            "price": 226.49},
    "222": {"item_id": "222", "options": {"color": "black", "battery life": "4 hours", "water resistance": "IPX7"},
            "price": 257.38},
    "333": {"item_id": "333", "options": {"color": "blue", "battery life": "6 hours", "water resistance": "IPX4"},
            "price": 232.49}}}


LINE = {"line_id": "L1002", "status": "Active", "roaming_enabled": False, "data_used_gb": 8.7}


def test_an_action_reported_done_that_only_a_field_name_mentions_is_a_phantom_call():
    run = (
        Run().user("My data does not work abroad (line L1002).").call("get_details_by_id", {"id": "L1002"})
        .result("get_details_by_id", LINE)
        .reply("Your line was not set up for roaming. I have now enabled roaming for your line.")
    )
    rep = run.report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "phantom_call"


def test_a_setting_the_user_switched_or_a_records_history_is_not_a_phantom_call():
    base = Run().user("My data does not work abroad (line L1002).").call("get_details_by_id", {"id": "L1002"}) \
        .result("get_details_by_id", LINE)
    steps = list(base.steps)
    run = Run()
    run.steps = list(steps)
    run.user("I’ve turned Data Roaming on. Data Roaming Enabled: Yes").reply("Great—Data Roaming is now enabled.")
    assert run.report().first_break is None
    run = Run()
    run.steps = list(steps)
    run.user("I followed your instructions and reset the APN settings, then restarted my phone.")
    assert run.reply("Your APN settings have been reset, so let's look at the app next.").report().first_break is None
    order = Run().call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
    assert order.reply("Your order #W1 was paid with your credit card on file.").report().first_break is None


def test_a_description_that_mixes_two_variants_is_a_wrong_record():
    run = Run().call("get_product_details", {"product_id": "9924732112"}).result("get_product_details", EARBUDS)
    # Blue, 8 hours and IPX4 name variant 111; $257.38 is 222's price.
    rep = run.reply("Here are the options:\n- Blue, 8 hours battery, IPX4 water resistance: $257.38\n"
                    "- Blue, 6 hours battery, IPX4 water resistance: $232.49").report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record"
    assert "257.38" in rep.reason and "226.49" in rep.reason


def test_descriptions_of_each_variant_in_one_sentence_are_not_mixed():
    run = Run().call("get_product_details", {"product_id": "9924732112"}).result("get_product_details", EARBUDS)
    rep = run.reply("Your current item: 222 (black, 4 hours, IPX7) – $257.38 • the new item: 111 (blue, 8 hours, "
                    "IPX4) – $226.49.").report()
    assert rep.first_break is None


def test_a_two_character_model_code_from_another_variant_is_a_wrong_record():
    laptops = {"name": "Laptop", "product_id": "4760268021", "variants": {
        "111": {"item_id": "111", "options": {"processor": "i7", "ram": "32GB"}, "price": 2508.06},
        "222": {"item_id": "222", "options": {"processor": "i9", "ram": "16GB"}, "price": 2611.7}}}
    run = Run().call("get_product_details", {"product_id": "4760268021"}).result("get_product_details", laptops)
    rep = run.reply("Item 111 – i9, 32GB RAM – $2,508.06").report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record" and "i9" in rep.reason


def test_a_value_said_to_be_absent_is_not_attributed():
    other = {"order_id": "#W2", "status": "delivered", "items": [{"name": "Puzzle", "item_id": "22", "price": 52.01}]}
    run = (
        Run().call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
        .call("get_order_details", {"order_id": "#W2"}).result("get_order_details", other)
        .reply("Order #W1 has status pending, not delivered yet.")
    )
    assert run.report().first_break is None


def test_a_result_about_another_record_used_as_the_one_asked_for_is_a_wrong_record():
    ivan = {"user_id": "ivan_johnson_6036", "name": {"first_name": "Ivan"}, "orders": ["#W1"]}
    run = Run().call("get_user_details", {"user_id": "mia_garcia_4516"}).result("get_user_details", ivan)
    steps = list(run.steps)
    rep = run.reply("Thank you, Mia. I have verified your account.").report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record"
    assert "mia_garcia_4516" in rep.reason and "ivan_johnson_6036" in rep.reason
    # Noticing it is right.
    ok = Run()
    ok.steps = steps
    assert ok.reply("The details returned are for a different user, ivan_johnson_6036; let me look again.").report() \
        .first_break is None


def test_details_of_a_record_whose_lookup_came_back_empty_are_unconfirmed():
    w2 = {"order_id": "#W2222222", "status": "delivered", "items": [{"name": "Puzzle", "item_id": "22", "price": 52.01}]}

    def run(second: str) -> Run:
        return (
            Run().call("get_order_details", {"order_id": "#W1111111"})
            .call("get_order_details", {"order_id": "#W2222222"})
            .result("get_order_details", ORDER).result("get_order_details", second)
        )

    steps = run("null").steps
    listing = "Your orders:\n1. Order #W1111111 (pending): Camera\n2. Order #W2222222 (delivered): Puzzle"
    r = Run()
    r.steps = list(steps)
    rep = r.reply(listing).report()
    assert rep.first_break == 4 and rep.evidence["pattern"] == "unconfirmed_success" and "#w2222222" in rep.reason
    # Said plainly, or with the result in hand, it is fine.
    r = Run()
    r.steps = list(steps)
    assert r.reply("I could not retrieve order #W2222222; order #W1111111 is pending.").report().first_break is None
    assert run(json.dumps(w2)).reply(listing).report().first_break is None


def test_a_stale_status_in_a_clause_next_to_a_promise_is_still_stale():
    requested = dict(ORDER, status="exchange requested")
    run = (
        Run().call("get_order_details", {"order_id": "#W1"}).result("get_order_details", ORDER)
        .call("exchange_delivered_order_items", {"order_id": "#W1"})
        .result("exchange_delivered_order_items", requested)
        .reply('Your exchange has been submitted. The order status is now "pending," and you will receive an '
               "email with instructions.")
    )
    rep = run.report()
    assert rep.first_break == 4 and rep.evidence["pattern"] == "stale_value"


def test_parallel_calls_success_of_the_one_that_worked():
    run = (
        Run().call("exchange_items", {"order_id": "#W1"}).call("return_items", {"order_id": "#W1"})
        .result("exchange_items", ORDER).result("return_items", "Error: Non-delivered order cannot be returned")
        .reply("The exchange for order #W1 has been processed. However, the return failed.")
    )
    assert run.report().first_break is None


def test_an_action_announced_as_next_and_then_as_done_with_no_call_is_a_phantom_call():
    # The run never calls "take", so no tool names the verb: the agent's own
    # "Next, I need to take it." does.
    def run(with_take: bool) -> Run:
        r = (
            Run().call("go to", "go to desk 1").result("go to", "On the desk 1, you see a pencil 1.")
            .thought("Now I find a pencil (1). Next, I need to take it.")
        )
        if with_take:
            r.call("take", "take pencil 1 from desk 1").result("take", "You pick up the pencil 1 from the desk 1.")
        return r.thought("Now I take a pencil (1). Next, I need to put it in/on shelf 1.")

    rep = run(with_take=False).report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "phantom_call"
    assert "take" in rep.reason
    assert run(with_take=True).report().first_break is None


def test_buying_from_a_product_page_never_opened_is_a_phantom_call():
    results = "[Back to Search] Page 1 (Total results: 50) [Next >] [B08SL7LRRQ] M580 Bluetooth Speaker $220.0"
    page = "[Back to Search] [< Prev] M580 Bluetooth Speaker Price: $220.0 [Description] [Buy Now]"

    def run(opened: bool) -> Run:
        r = Run().call("search", "bluetooth speaker").result("search", results)
        if opened:
            r.call("click", "B08SL7LRRQ").result("click", page)
        return r.final("Buy Now", tool="click", args="Buy Now")

    rep = run(opened=False).report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "phantom_call"
    assert "buy now" in rep.reason
    assert run(opened=True).report().first_break is None


# --- code agents -------------------------------------------------------------


def test_tests_claimed_to_pass_after_a_traceback():
    run = (
        Run().thought("Let me test it.").call("execute", "assert f(1) == 2\nprint(f(3))")
        .result("execute", "Traceback (most recent call last):\n  File \"<stdin>\", line 1\nAssertionError")
        .thought("The function seems to be working correctly. I can submit.")
    )
    rep = run.report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unconfirmed_success"


@pytest.mark.parametrize("claim", [
    "The function passed the test case without any AssertionError. I can now submit the solution.",
    "The rolling maximum elements are generated correctly.",
])
def test_success_claimed_after_a_traceback_in_other_words(claim):
    run = (Run().call("execute", "def f(x):\n    return x\nassert f(1) == 2")
           .result("execute", "Traceback (most recent call last):\n  File \"<stdin>\", line 3\nAssertionError")
           .thought(claim))
    assert run.report().first_break == 2


def test_owning_up_to_a_slip_after_a_traceback_is_no_success_claim():
    # MINT mbpp-67 (claude-2): the NameError is admitted, not passed over.
    run = (Run().call("execute", "def count(r):\n    return r\nassert count_Rectangles(2) == 8")
           .result("execute", "Traceback (most recent call last):\nNameError: name 'count_Rectangles' is not defined"))
    admitted = "Oops, I forgot to actually define the count_Rectangles function in the code I executed."
    assert run.thought(admitted + " Let me fix that and run it again.").report().first_break is None


def test_silent_asserts_back_a_passing_claim():
    run = (
        Run().call("execute", "def f(x):\n    return x + 1\nassert f(1) == 2")
        .result("execute", "[Executed Successfully with No Output]")
        .thought("The function passes the test. I can now submit the solution.")
    )
    assert run.report().first_break is None


def test_a_rejected_solution_resubmitted_unchanged():
    code = "def f(x):\n    return x + 1"
    run = (
        Run().call("solution", code).result("solution", "Your answer is wrong.\nYou have 3 steps left.")
        .thought("I think it is right after all.").final(code, tool="solution", args=code)
    )
    rep = run.report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "rejected_resubmission"
    assert "step 0" in rep.reason and "step 1" in rep.reason


def test_a_code_answer_is_not_read_as_prose_claims():
    code = "def count(nums):\n    seen = set()\n    return len([n for n in nums if n not in seen])"
    run = Run().call("execute", "print(1)").result("execute", "1").final(code, tool="solution", args=code)
    assert run.report().first_break is None


# --- shell and SQL agents -------------------------------------------------------


def test_data_claimed_after_an_empty_query_result():
    run = (
        Run().thought("I should list the singers.").call("sql", "SELECT name FROM singer WHERE age > 90")
        .result("sql", "[]").thought("The output contains the names of all singers.")
    )
    rep = run.report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unconfirmed_success"
    # Saying the result is empty is fine, and so is being done with it.
    ok = Run()
    ok.steps = run.steps[:3]
    assert ok.thought("The query returns an empty list. I am done.").report().first_break is None


def test_a_shell_error_then_a_description_of_its_output():
    run = (
        Run().call("bash", "find /system -name '*.out'").result("bash", "find: '/system': No such file or directory")
        .thought("This shows the paths of all the .out files.")
    )
    assert run.report().evidence.get("pattern") == "unconfirmed_success"


def test_a_fact_stated_as_read_right_after_the_search_failed():
    run = (Run().thought("I need to search Tim Kaine and find the state he is from.")
           .call("Search", "Tim Kaine").result("Search", "Invalid Action. Valid Actions are Search[<topic>].")
           .thought("Tim Kaine is from Virginia. I need to search Virginia next.")
           .call("Search", "Virginia"))
    rep = run.report(task="Which state is the running mate of Stronger Together's author from?")
    assert rep.first_break == 3
    assert "Virginia" in rep.reason


def test_a_plan_after_a_failed_search_names_what_it_will_look_up():
    run = (Run().call("Search", "Tim Kaine").result("Search", "Could not find [Tim Kaine].")
           .thought("I need to search Virginia governors instead.")
           .call("Search", "Virginia governors"))
    assert run.report(task="Which state is Tim Kaine from?").first_break is None


def test_a_table_name_no_result_showed_is_invented():
    run = (
        Run().call("sql", "SHOW TABLES").result("sql", "[('city',), ('country',)]")
        .thought("I should check what columns the cars_data table has.").call("sql", "DESC cars_data")
    )
    rep = run.report()
    assert rep.first_break == 2 and "cars_data" in rep.reason


def test_a_program_the_next_command_runs_is_no_invented_name():
    run = (
        Run().call("bash", "find /workspace").result("bash", "/workspace/a.txt /workspace/b.txt")
        .thought("I can use the md5sum command to hash each file.")
        .call("bash", "find /workspace -type f -exec md5sum {} + | sort")
    )
    assert run.report().first_break is None


def test_an_empty_query_result_acknowledged_after_a_run_on_action():
    # The model ran on into the next turn after its command ("…]\nObservation 7");
    # the command in the brackets is still a read whose empty answer may be the answer.
    run = Run()
    run._add(kind="action", tool="sql", text="execute[SELECT name FROM singer WHERE age > 90]\nObservation 7",
             args="execute[SELECT name FROM singer WHERE age > 90]\nObservation 7")
    run.result("sql", "[]").thought("The query ran but there are no results: no singer is over 90. I am done.")
    assert run.report().first_break is None


@pytest.mark.parametrize(
    ("printed", "flag", "grounded"),
    [
        ("48", "picoCTF{00000030}", True),  # the printed integer in hex, as the flag format asks
        ("49", "picoCTF{00000030}", False),
        ("( p ) ( i ) ( c ) ( o ) ( C ) ( T ) ( F ) ( { ) ( f ) ( 0 ) ( r ) ( 3 ) ( n ) ( s ) ( 1 ) ( c ) ( 5 ) ( } )",
         "picoCTF{f0r3ns1c5}", True),  # read off ASCII art, letter by letter
        ("( p ) ( i ) ( c ) ( o )", "picoCTF{f0r3ns1c5}", False),
    ],
)
def test_a_flag_is_grounded_by_what_was_printed_in_another_form(printed, flag, grounded):
    run = Run().call("bash", "python3 solve.py").result("bash", printed).final(f"submit {flag}", tool="submit")
    assert (run.report().first_break is None) is grounded


def test_facts_stated_after_planning_a_lookup_that_was_never_made():
    run = (Run().thought("I need to search Jaclyn Stapp and find the band of her husband.")
           .thought("Jaclyn Stapp is married to Scott Stapp, the voice of the band Creed.")
           .call("Search", "Creed"))
    rep = run.report(task="When did the band of Jaclyn Stapp's husband disband?")
    assert rep.first_break == 1 and rep.evidence["pattern"] == "phantom_call"
    assert "step 0" in rep.reason
    # The same facts after the search was made (and answered) are no phantom.
    made = (Run().thought("I need to search Jaclyn Stapp and find the band of her husband.")
            .call("Search", "Jaclyn Stapp").result("Search", "Jaclyn Stapp is the wife of Scott Stapp of Creed.")
            .thought("Jaclyn Stapp is married to Scott Stapp, the voice of the band Creed."))
    assert made.report(task="When did the band of Jaclyn Stapp's husband disband?").first_break is None


def test_a_whole_number_is_not_grounded_as_a_product_of_two_page_numbers():
    order = {"order_id": "#W5", "address": {"address1": "157 Oak Street"}, "items": 16, "pages": 10}
    run = Run().call("get_order_details", {"order_id": "#W5"}).result("get_order_details", order)
    bad = run.reply("Your order was shipped to 160 Oak Street.").report()
    assert bad.first_break == 2 and "160" in bad.reason


def test_an_offer_to_the_user_still_quotes_the_record():
    user = {"payment_methods": {"credit_card_1": {"brand": "visa", "last_four": "8902"}}}
    run = Run().call("get_user_details", {"user_id": "u1"}).result("get_user_details", user)
    bad = run.reply("You can change the payment method to your Visa card ending in 8905.").report()
    assert bad.first_break == 2 and "8905" in bad.reason
    good = Run()
    good.steps = run.steps[:2]
    assert good.reply("You can change the payment method to your Visa card ending in 8902.").report().first_break is None


def test_a_column_the_schema_did_not_list():
    run = (Run().call("sql", "DESC conductor")
           .result("sql", "[('Conductor_ID', 'int'), ('Name', 'text'), ('Age', 'int')]"))
    bad = Run()
    bad.steps = list(run.steps)
    rep = bad.thought("The conductor table has a Nationality field. I can count the nationalities.").report()
    assert rep.first_break == 2 and "Nationality" in rep.reason
    good = Run()
    good.steps = list(run.steps)
    assert good.thought("The conductor table has an Age column I can average.").report().first_break is None
    wonder = Run()
    wonder.steps = list(run.steps)
    assert wonder.thought("I should check if the orchestra table has a Nationality column.").report().first_break is None


def test_the_answer_stated_right_after_its_search_failed_is_no_recollection():
    run = (Run().call("Search", "Stronger Together (book)")
           .result("Search", "Stronger Together is a 2016 book by Hillary Clinton and her running mate Tim Kaine.")
           .thought("Tim Kaine is the running mate. I need to search Tim Kaine and find the state he is from.")
           .call("Search", "Tim Kaine").result("Search", "Invalid Action. Valid Actions are Search[<topic>].")
           .thought("Tim Kaine is from Virginia, so the answer is Virginia.").final("Virginia"))
    rep = run.report(task="Which state is the running mate of the author of Stronger Together from?")
    assert rep.first_break == 5 and "Virginia" in rep.reason


def test_not_finding_a_record_still_names_the_one_asked_for():
    run = Run().user("My order is #9502127.").call("get_order_details", {"order_id": "#9502127"}).result(
        "get_order_details", "Error: order not found")
    bad = run.reply("I'm sorry, but I couldn't find an order with ID #9502114.").report()
    assert bad.first_break == 3 and "9502114" in bad.reason
    good = Run()
    good.steps = run.steps[:3]
    assert good.reply("I'm sorry, but I couldn't find an order with ID #9502127.").report().first_break is None


def test_finding_what_the_agent_already_holds_needs_no_new_sighting():
    run = (Run().call("take", "take watch 1 from dresser 1").result("take", "You pick up the watch 1 from the dresser 1.")
           .call("go to", "go to safe 1").result("go to", "The safe 1 is open. In it, you see a cellphone 3.")
           .thought("Now I find a watch (1). Next, I need to put it in/on safe 1."))
    assert run.report(task="put some watch on safe.").first_break is None
    other = (Run().call("take", "take watch 1 from dresser 1").result("take", "You pick up the watch 1 from the dresser 1.")
             .call("go to", "go to safe 1").result("go to", "The safe 1 is open. In it, you see a cellphone 3.")
             .thought("Now I find a watch (2). Next, I need to take it."))
    assert other.report(task="put two watches on safe.").first_break == 4
    # Holding it is no reason to believe it was cleaned: that takes a call.
    cleaned = (Run().call("take", "take lettuce 1 from diningtable 1")
               .result("take", "You pick up the lettuce 1 from the diningtable 1.")
               .call("go to", "go to sinkbasin 1").result("go to", "On the sinkbasin 1, you see a apple 2.")
               .thought("Now I clean a lettuce (1). Next, I need to put it in/on diningtable 1."))
    assert cleaned.report(task="put a clean lettuce in diningtable.").first_break == 4


def test_a_table_named_after_planning_to_list_the_tables_without_listing_them():
    run = (Run().thought("I should find out what tables are available in this database.")
           .thought("I should check if the poker_player table has the earnings.")
           .call("sql", "DESC poker_player"))
    rep = run.report(task="What are the earnings of poker players?")
    assert rep.first_break == 1 and rep.evidence["pattern"] == "phantom_call"
    listed = (Run().thought("I should find out what tables are available in this database.")
              .call("sql", "SHOW TABLES").result("sql", "[('poker_player',), ('people',)]")
              .thought("I should check if the poker_player table has the earnings.")
              .call("sql", "DESC poker_player"))
    assert listed.report(task="What are the earnings of poker players?").first_break is None


def test_going_back_to_a_place_is_a_requery_only_if_nothing_is_done_there():
    def visit(run, place, seen):
        return run.call("go to", f"go to {place}").result("go to", f"On the {place}, you see {seen}.")

    run = visit(Run().call("take", "take pencil 1 from desk 1").result("take", "You pick up the pencil 1 from the desk 1."),
                "shelf 2", "a alarmclock 1")
    run = visit(run, "shelf 3", "nothing")
    back = visit(Run(), "x", "y")
    back.steps = list(run.steps)
    back = visit(back, "shelf 2", "a alarmclock 1")
    put = Run()
    put.steps = list(back.steps)
    put.call("put", "put pencil 1 in/on shelf 2").result("put", "You put the pencil 1 in/on the shelf 2.")
    assert put.report(task="put a pencil in shelf.").first_break is None
    wander = Run()
    wander.steps = list(back.steps)
    wander = visit(wander, "shelf 4", "nothing")
    rep = wander.report(task="put a pencil in shelf.")
    assert rep.first_break == 6 and rep.evidence["pattern"] == "requery"


def test_a_thought_quoting_an_observation_that_never_came():
    run = Run().thought("I should search Mogadishu.").thought("The observation says Mogadishu is the capital.")
    rep = run.report()
    assert rep.first_break == 1 and rep.evidence["pattern"] == "phantom_call"


def test_columns_named_after_planning_to_read_them_and_not_reading_them_are_a_phantom_call():
    def run(desc: bool) -> Run:
        r = (
            Run().call("sql", "SHOW TABLES").result("sql", "[('course',), ('teacher',)]")
            .thought("There is a `teacher` table. I should check what columns are available in this table.")
        )
        if desc:
            r.call("sql", "DESC teacher").result("sql", "[('Teacher_ID', 'int'), ('Name', 'text'), ('Hometown', 'text')]")
        return r.thought("The `teacher` table has a `Hometown` column. I can count teachers per hometown.")

    rep = run(desc=False).report(task="How many teachers are there in each hometown?")
    assert rep.first_break == 3 and rep.evidence["pattern"] == "phantom_call" and "Hometown" in rep.reason
    assert run(desc=True).report(task="How many teachers are there in each hometown?").first_break is None


# --- bad input -------------------------------------------------------------------


def test_mixed_languages_empty_turns_and_binary_looking_output():
    run = (
        Run().user("").user("我想退货 my order #W1").reply("")
        .call("get_order_details", {"order_id": "#W1"}).result("get_order_details", "\x00\x01\x02\ufffd" * 500)
        .reply("订单 #W1 已找到。")
    )
    run.report()  # no crash


def test_a_10_mb_json_result_is_analysed_quickly():
    big = json.dumps([{"id": i, "name": f"item {i}", "price": i * 1.5} for i in range(120_000)])
    assert len(big) > 5_000_000
    run = Run().call("list_items", {}).result("list_items", big).reply("There are many items.")
    started = time.perf_counter()
    run.report()
    assert time.perf_counter() - started < 5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["thought", "action", "observation", "final"]),
                          st.text(max_size=300), st.sampled_from([None, "user", "respond", "sql", "Search"])),
                max_size=12))
def test_any_step_sequence_gives_a_report(items):
    steps = [Step(index=i, kind=k, text=t, tool=tool, args={"content": t} if tool == "respond" else t)
             for i, (k, t, tool) in enumerate(items)]
    rep = report_all(steps, task="x", context={"system": "y", "tools": []})
    assert rep.first_break is None or rep.first_break in {s.index for s in steps}


# --- the new sources: no break on most succeeded runs -----------------------------


@pytest.mark.parametrize("source", ["tau2_retail_telecom", "mint_coding", "intercode"])
def test_breaks_on_succeeded_runs_of_the_new_sources_stay_rare(source):
    path = eval_runs(source)
    ok = [t for t in read_jsonl(path) if t.success]
    flagged = sum(report_all(t.steps, task=t.goal, context=t.context).first_break is not None for t in ok)
    # bench/anchoring_eval.py reports the exact figures; this pins the order.
    assert flagged / len(ok) <= 0.08


def test_a_reply_that_passes_over_a_failed_call_ignores_it():
    def run(error: str, reply: str) -> Run:
        return (
            Run().user("My mobile data is slow. My plan is P1010.")
            .call("get_details_by_id", {"id": "P1010"}).result("get_details_by_id", error)
            .reply(reply)
        )

    carry_on = "Let's start by checking your phone's network status. Please run the diagnostic and share the output."
    rep = run("Error: Plan with ID P1010 not found", carry_on).report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "ignored_observation" and "step 1" in rep.reason
    # Said plainly, or answering what the error says, it is fine.
    assert run("Error: Plan with ID P1010 not found", "I couldn't find your plan; could you check the ID?") \
        .report().first_break is None
    assert run("Error: Payment method should be the original payment method",
               "The refund must go to the original payment method. Shall I proceed?").report() \
        .first_break is None


def test_a_failed_call_worked_around_before_the_reply_is_not_passed_over():
    run = (
        Run().user("I'm Daiki Sanchez, email daiki@example.com.")
        .call("find_user_id_by_email", {"email": "daiki@example.com"}).result("find_user_id_by_email",
                                                                               "Error: User not found")
        .call("find_user_id_by_name_zip", {"first_name": "Daiki", "last_name": "Sanchez"})
        .result("find_user_id_by_name_zip", "daiki_sanchez_3253")
        .reply("Thank you, Daiki Sanchez. Could you please provide the order ID?")
    )
    assert run.report().first_break is None


def test_one_of_parallel_attempts_at_one_lookup_failing_is_not_passed_over():
    run = (
        Run().user("My emails are silva@example.com and amelia@example.com.")
        .call("find_user_id_by_email", {"email": "silva@example.com"})
        .call("find_user_id_by_email", {"email": "amelia@example.com"})
        .result("find_user_id_by_email", "Error: User not found").result("find_user_id_by_email", "amelia_7726")
        .reply("I found an account under amelia@example.com. Could you please confirm your ZIP code?")
    )
    assert run.report().first_break is None


def test_a_reply_that_addresses_the_user_by_a_name_no_one_gave_has_lost_track():
    user = {"user_id": "mei_kovacs_8020", "name": {"first_name": "Mei", "last_name": "Kovacs"}, "orders": ["#W1"]}

    def run(reply: str) -> Run:
        return (
            Run().user("Hi, I want to return an office chair. My user id is mei_kovacs_8020.")
            .call("get_user_details", {"user_id": "mei_kovacs_8020"}).result("get_user_details", user)
            .reply(reply)
        )

    # The word is in the evidence (the policy says it): only its place makes it a name.
    policy = {"system": "Processed returns are refunded within 5 days."}
    rep = run("Thank you, Processed. I have located your account.").report(context=policy)
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unsupported_claim" and "Processed" in rep.reason
    assert run("Thank you, Mei. I have located your account.").report().first_break is None
    assert run("Thank you for your patience, Mei Kovacs!").report().first_break is None
    assert run("Thank you, and have a great day!").report().first_break is None


def test_the_users_email_or_id_gives_the_name_the_agent_uses():
    run = (
        Run().user("Yeah, it's mia.garcia2723@example.com.")
        .call("find_user_id_by_email", {"email": "mia.garcia2723@example.com"})
        .result("find_user_id_by_email", "mia_garcia_4516")
        .call("get_user_details", {"user_id": "mia_garcia_4516"})
        .result("get_user_details", {"user_id": "mia_garcia_4516", "name": {"first_name": "Mia"}})
        .reply("Thanks, Mia! I've located your account.")
    )
    assert run.report().first_break is None
    run.steps = run.steps[:3]
    assert run.reply("Thanks, Mia! I've located your account.").report().first_break is None


def test_an_action_named_after_a_tool_of_the_run_reported_done_with_no_call_is_a_phantom_call():
    tools = [{"type": "function", "function": {"name": "refuel_data", "parameters": {}}},
             {"type": "function", "function": {"name": "get_details_by_id", "parameters": {}}}]
    line = {"line_id": "L1002", "data_used_gb": 15.1, "data_limit_gb": 15.0}

    def run(refuel: bool) -> Run:
        r = (
            Run().user("Yes, please add 2 GB of data to line L1002.")
            .call("get_details_by_id", {"id": "L1002"}).result("get_details_by_id", line)
        )
        if refuel:
            r.call("refuel_data", {"line_id": "L1002", "gb_amount": 2}).result("refuel_data", line)
        return r.reply("Your line has been refueled with 2 GB of data. Please reboot your device.")

    rep = run(refuel=False).report(context={"tools": tools})
    assert rep.first_break == 3 and rep.evidence["pattern"] == "phantom_call" and "refuel_data" in rep.reason
    assert run(refuel=True).report(context={"tools": tools}).first_break is None


def test_a_description_two_variants_fit_equally_but_for_a_crossed_field_is_a_wrong_record():
    lamps = {"name": "Desk Lamp", "product_id": "6817146515", "variants": {
        "111": {"item_id": "111", "options": {"color": "black", "brightness": "high", "power source": "AC adapter"},
                "available": True, "price": 154.17},
        "222": {"item_id": "222", "options": {"color": "black", "brightness": "medium", "power source": "AC adapter"},
                "available": True, "price": 161.23}}}
    run = Run().call("get_product_details", {"product_id": "6817146515"}).result("get_product_details", lamps)
    # $154.17 is 111's, medium brightness is 222's: neither lamp is described.
    rep = run.reply("Here is the option:\n- Black, medium brightness, AC adapter (available, $154.17)").report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record" and "medium" in rep.reason
    ok = Run().call("get_product_details", {"product_id": "6817146515"}).result("get_product_details", lamps)
    assert ok.reply("Here is the option:\n- Black, high brightness, AC adapter (available, $154.17)").report() \
        .first_break is None


def test_a_parenthesis_next_to_an_id_describes_that_record_on_either_side_of_an_exchange():
    puzzles = {"name": "Jigsaw Puzzle", "product_id": "1808611083", "variants": {
        "9779102705": {"item_id": "9779102705", "options": {"pieces": "1000", "difficulty level": "intermediate"},
                       "available": True, "price": 54.11},
        "1096508426": {"item_id": "1096508426", "options": {"pieces": "500", "difficulty level": "beginner"},
                       "available": True, "price": 46.13},
        "5645314103": {"item_id": "5645314103", "options": {"pieces": "2000", "difficulty level": "expert"},
                       "available": False, "price": 328.25}}}
    run = Run().call("get_product_details", {"product_id": "1808611083"}).result("get_product_details", puzzles)
    steps = list(run.steps)
    rep = run.reply("You're swapping out item 9779102705 (1000-piece, intermediate, $328.25) for item "
                    "1096508426.").report()
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record" and "328.25" in rep.reason
    ok = Run()
    ok.steps = list(steps)
    assert ok.reply("You're swapping out item 9779102705 (1000-piece, intermediate, $54.11) for item "
                    "1096508426.").report().first_break is None


def test_the_agents_own_report_of_an_action_the_user_did_on_the_device_needs_its_call():
    tools = [{"type": "function", "function": {"name": "enable_roaming", "parameters": {}}}]

    def run(reply: str) -> Run:
        return (
            Run().user("My MMS fails abroad.").reply("Please turn on data roaming on your phone.")
            .user("Okay, I enabled data roaming on my phone.").reply(reply)
        )

    rep = run("I've enabled roaming on your line. Please reboot your device.").report(context={"tools": tools})
    assert rep.first_break == 3 and rep.evidence["pattern"] == "phantom_call"
    assert run("Great, roaming is now enabled on your phone.").report(context={"tools": tools}).first_break is None


def test_a_claim_is_judged_against_the_call_of_the_batch_it_names_by_id():
    w2 = dict(ORDER, order_id="#W2222222")

    def run(second: str) -> Run:
        # Both orders were read before: "details of an unanswered lookup" does not apply.
        return (
            Run().call("get_order_details", {"order_id": "#W1111111"})
            .result("get_order_details", dict(ORDER, order_id="#W1111111"))
            .call("get_order_details", {"order_id": "#W2222222"}).result("get_order_details", w2)
            .user("Please change both orders.")
            .call("modify_pending_order_items", {"order_id": "#W1111111"})
            .call("modify_pending_order_items", {"order_id": "#W2222222"})
            .result("modify_pending_order_items", dict(ORDER, order_id="#W1111111"))
            .result("modify_pending_order_items", second)
            .reply("Both orders are updated.\n1. Order #W1111111: the camera has been changed.\n"
                   "2. Order #W2222222: the camera has been changed.")
        )

    orders = "Change my orders #W1111111 and #W2222222."
    rep = run("Error: The new item id should be different from the old item id").report(task=orders)
    assert rep.first_break == 9 and rep.evidence["pattern"] == "unconfirmed_success" and "#w2222222" in rep.reason
    assert run(json.dumps(w2)).report(task=orders).first_break is None


def test_a_thing_said_to_be_in_a_record_it_is_not_part_of_is_a_wrong_record():
    w1 = {"order_id": "#W5490111", "status": "delivered", "items": [
        {"name": "Water Bottle", "item_id": "11", "price": 54.85},
        {"name": "Action Camera", "item_id": "12", "price": 481.5},
        {"name": "Backpack", "item_id": "13", "price": 193.38}]}
    w2 = {"order_id": "#W7387996", "status": "delivered", "items": [
        {"name": "Gaming Mouse", "item_id": "21", "price": 158.89}]}

    task = "Return items from my orders #W5490111 and #W7387996."

    def run(reply: str) -> Run:
        return (
            Run().call("get_order_details", {"order_id": "#W5490111"}).result("get_order_details", w1)
            .call("get_order_details", {"order_id": "#W7387996"}).result("get_order_details", w2)
            .reply(reply)
        )

    rep = run("To process your return for the Water Bottle, Action Camera, and Gaming Mouse from order #W5490111, "
              "I need your refund method.").report(task=task)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record" and "gaming mouse" in rep.reason
    assert run("To process your return for the Water Bottle, Action Camera, and Backpack from order #W5490111, "
               "I need your refund method.").report(task=task).first_break is None
    assert run("The Water Bottle from order #W5490111 and the Gaming Mouse from order #W7387996 can be "
               "returned.").report(task=task).first_break is None
    rep = run("The Gaming Mouse in order #W5490111 has been returned.").report(task=task)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record"


def test_again_or_a_negation_about_something_else_does_not_acknowledge_a_failed_call():
    def run(reply: str) -> Run:
        return (
            Run().user("I paid the bill for line L1002.")
            .call("resume_line", {"line_id": "L1002"}).result("resume_line", "Error: Line must be suspended to resume")
            .reply(reply)
        )

    rep = run("Your payment has been received and your line is now active again. Please reboot your phone.").report()
    assert rep.first_break == 3 and rep.evidence["pattern"] in ("ignored_observation", "unconfirmed_success")
    rep = run("Let's check your phone. That will help us see why MMS isn't working.").report()
    assert rep.first_break == 3
    assert run("I couldn't resume your line; it is not suspended.").report().first_break is None


# --- calls reported as made ----------------------------------------------------


def test_a_search_reported_as_made_that_was_never_made_is_a_phantom_call():
    rep = Run().thought("I already searched [Juliet Starling], and it confirms what I need.").report(
        "Who voiced Juliet Starling?")
    assert rep.first_break == 0 and rep.evidence["pattern"] == "phantom_call"
    assert "no earlier call" in rep.reason


def test_a_search_reported_as_made_that_was_made_is_no_phantom():
    rep = (
        Run().command("search[Juliet Starling]", "search")
        .result("search", "Juliet Starling is the protagonist of Lollipop Chainsaw, voiced by Tara Strong.")
        .thought("I already searched [Juliet Starling]: Tara Strong voiced her.")
        .report("Who voiced Juliet Starling?")
    )
    assert rep.first_break is None


def test_a_command_reported_as_run_is_matched_against_the_commands_sent():
    base = Run().run("bash", "ls /workspace").result("bash", "a.c\nb.c")
    rep = base.thought("I already ran `find /workspace -name \"*.c\" -size +1k`, and it returned what I need.").report(
        "Count the .c files over 1k")
    assert rep.first_break == 2 and rep.evidence["pattern"] == "phantom_call"
    rep = (
        Run().run("bash", "find /workspace -name \"*.c\" -size +1k").result("bash", "/workspace/a.c")
        .thought("I already ran `find /workspace -name \"*.c\" -size +1k`; it lists one file.")
        .report("Count the .c files over 1k")
    )
    assert rep.first_break is None


def test_code_reported_as_run_before_anything_ran_is_a_phantom_call():
    rep = Run().thought("I have already run this approach on the examples in the task, and every one of them passes.") \
        .report("Write a function that sums a list.")
    assert rep.first_break == 0 and rep.evidence["pattern"] == "phantom_call"
    # ...while planning to run it, or saying so after a run, is not.
    assert Run().thought("I will run this approach on the examples in the task.").report("Sum a list.").first_break is None


def test_a_page_claimed_to_hold_the_answer_right_after_the_search_failed():
    rep = (
        Run().command("search[SAS]", "search")
        .result("search", "Could not find [SAS]. Similar: ['Special Air Service', 'SAS Institute'].")
        .thought("The page for SAS has the information I need, so I can answer from it.")
        .report("When was the SAS founded?")
    )
    assert rep.first_break == 2 and rep.evidence["pattern"] == "unconfirmed_success"
    rep = (
        Run().command("search[SAS]", "search")
        .result("search", "Could not find [SAS]. Similar: ['Special Air Service', 'SAS Institute'].")
        .thought("The page for SAS does not exist. I need to search Special Air Service instead.")
        .report("When was the SAS founded?")
    )
    assert rep.first_break is None


def test_an_option_claimed_selected_after_the_click_was_refused():
    page = "[Back to Search]\nsize [small][medium][large]\nColor [black][white]\nPrice: $12.99\n[Buy Now]"
    base = Run().command("click[B0781MT9H6]", "click").result("click", page).command("click[x-large]", "click")
    rep = base.result("click", "Invalid action!").thought("I have selected x-large, and the item now matches.").report(
        "a black shirt in x-large")
    assert rep.first_break == 4 and rep.evidence["pattern"] == "unconfirmed_success"


CUSTOMER = {"customer_id": "C1", "phone_number": "555-123-2002", "account_status": "Active",
            "line_ids": ["L1", "L2"]}
LINES = [{"line_id": "L1", "phone_number": "555-123-2001", "status": "Active"},
         {"line_id": "L2", "phone_number": "555-123-2002", "status": "Suspended"}]


def _telecom_run() -> Run:
    run = Run().call("get_customer_by_phone", {"phone_number": "555-123-2002"}).result(
        "get_customer_by_phone", CUSTOMER)
    for line in LINES:
        run = run.call("get_details_by_id", {"id": line["line_id"]}).result("get_details_by_id", line)
    return run


@pytest.mark.parametrize(("reply", "slip"), [
    ("Your line (555-123-2002) is currently active.", True),
    ("Your line (555-123-2002) is currently suspended.", False),
    # The number is the customer's too: without the kind named, which record is meant is open.
    ("The account for 555-123-2002 is active.", False),
])
def test_a_number_two_records_hold_names_the_one_whose_kind_the_sentence_says(reply, slip):
    rep = _telecom_run().reply(reply).report()
    assert (rep.first_break == 6 and rep.evidence["pattern"] == "wrong_record") is slip, rep.reason
    if slip:
        assert "l2" in rep.reason.lower() and "suspended" in rep.reason.lower()


CARDS = {"user_id": "u1", "payment_methods": {
    "credit_card_1": {"id": "credit_card_1", "source": "credit_card", "brand": "mastercard", "last_four": "8484"},
    "credit_card_2": {"id": "credit_card_2", "source": "credit_card", "brand": "visa", "last_four": "6791"}}}


@pytest.mark.parametrize(("reply", "slip"), [
    ("The payment was made using your Visa ending in 8484.", True),
    ("The payment was made using your Mastercard ending in 8484.", False),
    ("I can refund it to your Visa ending in 6791.", False),
])
def test_a_cards_last_four_digits_name_the_card(reply, slip):
    run = Run().call("get_user_details", {"user_id": "u1"}).result("get_user_details", CARDS)
    rep = run.reply(reply).report()
    assert (rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record") is slip, rep.reason


def test_a_measure_written_with_its_unit_is_the_number_a_record_holds():
    from tracing.core.anchoring.records import _sentence_terms

    terms = _sentence_terms('The 500-piece "art" puzzle, 2-pack, x-large.')
    assert {"500", "2", "500-piece"} <= terms and "x" not in terms - {"x-large"}


def test_a_whole_number_is_not_grounded_as_a_rounded_quotient():
    product = {"product_id": "p1", "name": "HDMI cable", "price": 62.93, "pack": "10-pack", "length": "6 feet"}
    run = Run().call("get_product_details", {"product_id": "p1"}).result("get_product_details", product)
    # 62.93 / 5 = 12.59: rounding it to 13 would ground any whole number.
    assert run.thought("The cable is 13 feet long and comes in a 5 pack.").report().first_break == 2
    even = {"product_id": "p2", "name": "Box", "price": 120, "count": 8}
    run = Run().call("get_product_details", {"product_id": "p2"}).result("get_product_details", even)
    assert run.thought("At 120 for 8 boxes, that is 15 each.").report().first_break is None


def test_an_object_in_brackets_needs_that_object_observed():
    # "a watch (1)" names one object: the task's word "watch" and some "1" in
    # view ("sidetable 1") are no sighting of it.
    seen = "On the sidetable 1, you see a cellphone 1, a creditcard 1, and a keychain 2."
    run = (Run().call("go to", "go to sidetable 1").result("go to", seen)
           .thought("Now I find a watch (1). Next, I need to take it."))
    rep = run.report(task="put a watch in safe.")
    assert rep.first_break == 2 and "watch 1" in rep.reason
    there = (Run().call("go to", "go to sidetable 1").result("go to", seen.replace("keychain 2", "watch 1"))
             .thought("Now I find a watch (1). Next, I need to take it."))
    assert there.report(task="put a watch in safe.").first_break is None


def test_only_a_number_alone_in_brackets_is_an_instance():
    from tracing.core.anchoring.salience import extract

    assert extract("Skateboard (2 types), Premium Plan (15 GB/month), a watch (1).").instances == {"watch 1"}


ORDER_LINES = {"order_id": "#W7", "status": "delivered", "items": [
    {"name": "T-Shirt", "item_id": "9612", "price": 50.88}, {"name": "E-Reader", "item_id": "6268", "price": 244.02}]}
SHIRTS = {"name": "T-Shirt", "product_id": "p9", "variants": {
    "9612": {"item_id": "9612", "options": {"color": "red"}, "price": 50.88},
    "7497": {"item_id": "7497", "options": {"color": "blue"}, "price": 100.83}}}


@pytest.mark.parametrize(("price", "slip"), [("100.83", True), ("50.88", False)])
def test_a_list_headed_by_an_order_describes_that_orders_lines(price, slip):
    run = (Run().call("get_order_details", {"order_id": "#W7"}).result("get_order_details", ORDER_LINES)
           .call("get_product_details", {"product_id": "p9"}).result("get_product_details", SHIRTS))
    rep = run.reply(f"You want to return these items from order #W7:\n- E-Reader (price: $244.02)\n"
                    f"- T-Shirt (price: ${price})").report()
    assert (rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record") is slip, rep.reason
    if slip:
        assert "9612" in rep.reason and "50.88" in rep.reason


def test_a_record_named_by_its_id_does_not_name_the_record_that_lists_it():
    customer = dict(CUSTOMER, bill_ids=["B1234321"])
    bill = {"bill_id": "B1234321", "customer_id": "C1", "status": "Overdue", "total_due": 65.0}
    run = Run().call("get_customer_by_phone", {"phone_number": "555-123-2002"}).result("get_customer_by_phone", customer)
    for line in LINES:
        run = run.call("get_details_by_id", {"id": line["line_id"]}).result("get_details_by_id", line)
    run = run.call("get_bills", {"customer_id": "C1"}).result("get_bills", bill)
    rep = run.reply("Your line (555-123-2002) is currently active due to an overdue bill (Bill ID: B1234321).").report()
    assert rep.first_break == 8 and rep.evidence["pattern"] == "wrong_record", rep.reason


def test_a_list_line_that_names_its_own_record_is_judged_on_that_record():
    run = (Run().call("get_order_details", {"order_id": "#W7"}).result("get_order_details", ORDER_LINES)
           .call("get_product_details", {"product_id": "p9"}).result("get_product_details", SHIRTS))
    rep = run.reply("Here is the exchange for order #W7:\n- Current item: T-Shirt (item 9612) – $50.88\n"
                    "- New item: T-Shirt (item 7497, blue) – $100.83").report()
    assert rep.first_break is None, rep.reason


@pytest.mark.parametrize(("used", "slip"), [("3.2", True), ("8.7", False)])
def test_a_sentence_goes_on_about_the_record_the_one_before_it_named(used, slip):
    lines = [dict(LINES[0], data_used_gb=3.2), dict(LINES[1], data_used_gb=8.7)]
    run = Run().call("get_customer_by_phone", {"phone_number": "555-123-2002"}).result(
        "get_customer_by_phone", CUSTOMER)
    for line in lines:
        run = run.call("get_details_by_id", {"id": line["line_id"]}).result("get_details_by_id", line)
    rep = run.reply(f"Your line (555-123-2002) is suspended. You've used {used} GB so far.").report()
    assert (rep.first_break == 6 and rep.evidence["pattern"] == "wrong_record") is slip, rep.reason


def test_a_sentence_with_a_subject_of_its_own_is_not_about_the_record_before_it():
    lines = [dict(LINES[0], data_used_gb=3.2), dict(LINES[1], data_used_gb=8.7)]
    run = Run().call("get_customer_by_phone", {"phone_number": "555-123-2002"}).result(
        "get_customer_by_phone", CUSTOMER)
    for line in lines:
        run = run.call("get_details_by_id", {"id": line["line_id"]}).result("get_details_by_id", line)
    rep = run.reply("Your line (555-123-2002) is suspended. Your other line used 3.2 GB so far.").report()
    assert rep.first_break is None, rep.reason


@pytest.mark.parametrize(("output", "slip"), [("[]", True), ("[('Joe', 52), ('Ann', 41)]", False)])
def test_the_present_tense_reads_a_result_that_just_came_back(output, slip):
    run = (Run().command("SELECT name, age FROM singer WHERE age > 40", "execute").result("execute", output)
           .thought("The query returns the matching records, so this answers the question."))
    rep = run.report(task="List the singers older than 40.")
    assert (rep.first_break == 2 and rep.evidence["pattern"] == "unconfirmed_success") is slip, rep.reason


def test_the_present_tense_before_running_describes_the_query():
    run = (Run().thought("This query returns the names of all singers older than 40.")
           .command("SELECT name FROM singer WHERE age > 40", "execute").result("execute", "[('Joe',)]"))
    assert run.report(task="List the singers older than 40.").first_break is None
