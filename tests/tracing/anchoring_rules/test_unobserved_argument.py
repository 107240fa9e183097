"""unobserved_argument: a tool-calling customer-service agent and a household text agent."""

from __future__ import annotations

from tests.tracing.helpers import Run


def _unobserved(run: Run, task: str = "help the customer"):
    return [b.step for b in run.report(task=task).breaks if b.pattern == "unobserved_argument"]


def test_an_id_after_the_lookup_failed():
    run = (Run().user("My phone number is 555-123-2002.")
           .call("get_customer_by_phone", {"phone": "555-123-2002"})
           .result("get_customer_by_phone", "Error: Customer not found")
           .call("get_details_by_id", {"id": "L1001"}))
    assert _unobserved(run) == [3]


def test_an_id_the_lookup_returned():
    run = (Run().user("My phone number is 555-123-2002.")
           .call("get_customer_by_phone", {"phone": "555-123-2002"})
           .result("get_customer_by_phone", {"customer_id": "L1001", "name": "Mei Lin"})
           .call("get_details_by_id", {"id": "L1001"}))
    assert _unobserved(run) == []


ROOM = "You are in the middle of a room. Looking quickly around you, you see a shelf 1, a drawer 1, a countertop 1."


def test_taking_a_mug_never_seen():
    run = (Run().command("go to shelf 1", tool="go to").result("go to", "On the shelf 1, you see a vase 1.")
           .command("take mug 2 from shelf 1", tool="take"))
    assert _unobserved(run, ROOM + " Your task is to: put a mug in the drawer.") == [2]


def test_taking_the_mug_in_sight():
    run = (Run().command("go to shelf 1", tool="go to").result("go to", "On the shelf 1, you see a mug 2.")
           .command("take mug 2 from shelf 1", tool="take"))
    assert _unobserved(run, ROOM + " Your task is to: put a mug in the drawer.") == []
