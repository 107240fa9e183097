"""A tool call whose argument carries an identifier no evidence holds (tracing.core.anchoring.rules.unobserved_argument)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tracing.helpers import Run
from tracing.core.anchoring.rules.unobserved_argument import call_identifiers, command_objects


def _unobserved(report) -> list[int]:
    return [b.step for b in report.breaks if b.pattern == "unobserved_argument"]


# --- flagged -----------------------------------------------------------------


def test_a_line_id_used_after_the_customer_lookup_failed_is_a_break_at_that_call():
    run = (
        Run().user("Hi, my phone number is 555-123-2002 and my data is not working.")
        .call("get_customer_by_phone", {"phone_number": "555-123-2002"})
        .result("get_customer_by_phone", "Error: Customer not found")
        .call("get_details_by_id", {"id": "L1001"})
    )
    report = run.report()
    assert report.first_break == 3
    assert report.evidence["pattern"] == "unobserved_argument"
    assert "step 3" in report.reason and "L1001" in report.reason
    assert "step 1" in report.reason and "returned an error" in report.reason


def test_a_user_id_no_lookup_returned_is_a_break():
    run = (
        Run().user("I'm Sofia Hernandez, zip 98193, I want to return an item.")
        .call("find_user_id_by_name_zip", {"first_name": "Sofia", "last_name": "Hernandez", "zip": "98193"})
        .result("find_user_id_by_name_zip", "Error: User not found")
        .call("get_user_details", {"user_id": "sofia_hernandez_5364"})
    )
    report = run.report()
    assert report.first_break == 3
    assert "sofia_hernandez_5364" in report.reason


def test_a_call_whose_lookup_never_happened_is_a_break():
    run = Run().user("Can you check my order? My email is ana@example.com.").call(
        "get_order_details", {"order_id": "#W4923227"})
    report = run.report()
    assert _unobserved(report) == [1]
    assert "no call had returned anything" in report.reason


def test_an_object_never_seen_taken_from_a_receptacle_is_a_break():
    run = (
        Run().command("go to shelf 1", "go to").result("go to", "On the shelf 1, you see a cup 1, and a vase 2.")
        .command("take mug 2 from shelf 1", "take")
    )
    report = run.report(task="put a mug in the coffeemachine.")
    assert report.first_break == 2
    assert report.evidence["pattern"] == "unobserved_argument"
    assert "mug 2" in report.reason


def test_the_thought_of_the_same_turn_does_not_make_the_id_observed_it_is_where_the_break_starts():
    run = (
        Run().user("My internet is down.")
        .thought("The line is probably L1001, let me look at it.")
        .call("get_details_by_id", {"id": "L1001"})
    )
    breaks = [b for b in run.report().breaks if b.pattern == "unobserved_argument"]
    assert [b.step for b in breaks] == [1]
    assert "step 1" in breaks[0].reason and "step 2" in breaks[0].reason


def test_an_object_a_thought_claims_to_find_and_the_call_then_takes_breaks_at_the_thought():
    run = (
        Run().command("go to countertop 3", "go to")
        .result("go to", "On the countertop 3, you see a bread 2, a knife 1, and a vase 3.")
        .thought("Now I find an apple (1). Next, I need to take it.")
        .command("take apple 1 from countertop 3", "take")
    )
    report = run.report(task="heat some apple and put it in garbagecan.")
    assert report.first_break == 2 and "apple 1" in report.reason
    # The "found it" claim is reported first; the call acting on it is named too.
    acted = [b for b in report.breaks if b.pattern == "unobserved_argument"]
    assert acted and acted[0].step == 2 and "step 3" in acted[0].reason


def test_an_id_that_differs_in_one_digit_from_an_observed_one_is_unseen():
    run = (
        Run().user("My customer id is C1001.").call("get_customer_by_id", {"customer_id": "C1001"})
        .result("get_customer_by_id", {"customer_id": "C1001", "line_ids": ["L1001"]})
        .call("get_details_by_id", {"id": "L10011"})
    )
    assert _unobserved(run.report()) == [3]


# --- not flagged -----------------------------------------------------------------


def test_ids_from_results_user_turns_and_the_context_are_observed():
    context = {"system": "Transfer to a human with code HUMAN-7781 if needed.",
               "tools": [{"name": "get_plan", "parameters": {"plan_id": {"enum": ["P2002", "P3003"]}}}]}
    run = (
        Run().user("Hi, I'm sofia_hernandez_5364, phone (555) 123-2002, email Sofia.H@example.com.")
        .call("get_user_details", {"user_id": "sofia_hernandez_5364"})
        .result("get_user_details", {"user_id": "sofia_hernandez_5364", "orders": ["#W4923227"]})
        .call("get_order_details", {"order_id": "#W4923227"})
        .result("get_order_details", {"order_id": "#W4923227", "items": [{"item_id": "5753502325"}]})
        .call("find_by_phone", {"phone": "555-123-2002", "email": "sofia.h@example.com"})
        .result("find_by_phone", {"ok": True})
        .call("get_plan", {"plan_id": "P2002"})
        .result("get_plan", {"plan_id": "P2002"})
        .call("return_items", {"order_id": "#W4923227", "item_ids": ["5753502325"], "code": "HUMAN-7781"})
    )
    assert _unobserved(run.report(context=context)) == []


def test_an_order_number_said_without_its_letter_backs_the_full_id():
    run = (
        Run().user("The order ID is 9502127.")
        .call("get_order_details", {"order_id": "#9502127"}).result("get_order_details", "Error: Order not found")
        .user("Oh, I forgot the W at the beginning.")
        .call("get_order_details", {"order_id": "#W9502127"})
    )
    assert _unobserved(run.report()) == []


def test_free_text_amounts_dates_and_expressions_are_not_identifiers():
    assert call_identifiers("transfer", {"summary": "User on 4G/5G abroad, line L1001 suspended"}) == []
    assert call_identifiers("calculate", {"expression": "1166.98 - 481.5"}) == []
    assert call_identifiers("book", {"date": "2024-05-01", "amount": "58.50", "count": 3, "seat": "12"}) == []
    assert [u.value for u in call_identifiers("f", {"id": "L1001", "n": 5753502325})] == ["L1001", "5753502325"]


def test_exploring_places_and_handling_what_is_held_are_not_flagged():
    run = (
        Run().command("go to drawer 3", "go to").result("go to", "Nothing happens.")
        .command("open drawer 4", "open").result("open", "You open the drawer 4. In it, you see a mug 2.")
        .command("take mug 2 from drawer 4", "take").result("take", "You pick up the mug 2 from the drawer 4.")
        .command("go to coffeemachine 1", "go to").result("go to", "On the coffeemachine 1, you see nothing.")
        .command("put mug 2 in/on coffeemachine 1", "put")
    )
    assert _unobserved(run.report(task="put a mug in the coffeemachine.")) == []
    assert command_objects("go to shelf 7") == []
    assert [u.value for u in command_objects("heat apple (1) with microwave 1")] == ["apple 1"]


def test_shell_sql_and_python_programs_are_not_checked_word_by_word():
    run = (
        Run().command("ls /", "bash").result("bash", "bin\netc\nusr")
        .command('find . -name "file42.txt"', "bash").result("bash", "")
        .command("cat /etc/passwd2", "bash").result("bash", "cat: /etc/passwd2: No such file or directory")
        .command("SELECT name FROM singer2 WHERE id = 10042", "execute").result("execute", "[]")
        .command("def f(tup1, num2):\n    return tup1[0] + num2", "execute")
    )
    assert _unobserved(run.report(task="Count the txt files.")) == []


def test_a_trace_that_opens_on_a_call_with_nothing_given_is_not_judged():
    run = Run().call("get_reservation_details", {"reservation_id": "ZFA04Y"})
    assert _unobserved(run.report()) == []
    assert _unobserved(run.report(task="Check reservation ABC123 for me.")) == [0]


# --- shell commands reading files ----------------------------------------------


def test_a_command_reading_a_file_no_listing_showed_is_a_break_once_it_works():
    run = (
        Run().command("ls", "bash").result("bash", "/bin/bash: line 1: ls: command not found")
        .command("cat VaultDoor7.java", "bash").result("bash", "import java.util.*;\nclass VaultDoor7 {}")
    )
    report = run.report(task="Find the flag in the vault door program.")
    assert report.first_break == 2
    assert report.evidence["pattern"] == "unobserved_argument"
    assert "VaultDoor7.java" in report.reason and "step 3" in report.reason


def test_guessed_created_and_listed_files_are_exploration_not_breaks():
    run = (
        Run().command("cat flag2.txt", "bash").result("bash", "cat: flag2.txt: No such file or directory")
        .command("ls", "bash").result("bash", "chall_3.S  notes.txt")
        .command("cat chall_3.S", "bash").result("bash", ".text\nfunc1:")
        .command("echo 'int main(){}' > solve1.c", "bash").result("bash", "")
        .command("gcc solve1.c -o solve1.out", "bash").result("bash", "")
        .command("ls out2.txt", "bash").result("bash", "out2.txt")
    )
    assert _unobserved(run.report(task="Read the assembly and find the flag.")) == []


# --- bad input ----------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["call", "result", "user", "thought", "command"]), _json,
                          st.text(max_size=80)), max_size=10))
def test_any_arguments_and_results_give_a_report(items):
    # Function-call arguments of any JSON shape, text commands of any text:
    # the argument check must never crash the report.
    run = Run()
    for what, data, text in items:
        if what == "call":
            run.call("get_details_by_id", data)
        elif what == "result":
            run.result("get_details_by_id", data if not isinstance(data, float) else str(data))
        elif what == "user":
            run.user(text)
        elif what == "thought":
            run.thought(text)
        else:
            run.command(text or "look", "bash")
    rep = run.report(task="help me")
    assert rep.first_break is None or rep.first_break in {s.index for s in run.steps}


def test_huge_binary_and_mixed_language_arguments_give_a_report():
    huge = {"items": [{"item_id": f"{i:010d}", "note": "价格 price ✓"} for i in range(200_000)]}  # ~10 MB
    run = (
        Run().user("我的订单号是 #W1234567，please check it.")
        .call("get_order_details", {"order_id": "#W1234567"}).result("get_order_details", huge)
        .call("get_order_details", {"order_id": "\x00\xff\ufffd" * 1000})
        .command("cat \x00\x01binary7.bin", "bash")
    )
    rep = run.report(task="查看订单")
    assert rep.first_break in (None, 3, 4)


ROOM = ("You are in the middle of a room. Looking quickly around you, you see a drawer 2, a drawer 1, "
        "a countertop 1, and a fridge 1. Your task is to: put a mug in the fridge.")


def test_a_place_the_room_listing_lacks_is_made_up_but_only_where_there_is_a_listing():
    run = Run().command("go to drawer 7", "go to").result("go to", "On the drawer 7, you see a mug 2.")
    report = run.report(task=ROOM)
    assert report.first_break == 0 and report.evidence["unseen"] == ["drawer 7"]
    assert run.report(task="put a mug in the fridge.").first_break is None  # no listing: nothing to judge by
    assert Run().command("go to drawer 2", "go to").result("go to", "The drawer 2 is closed.").report(
        task=ROOM).first_break is None
    assert [u.value for u in command_objects("take mug 2 from drawer 7", places=True)] == ["mug 2", "drawer 7"]
