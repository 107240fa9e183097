"""wrong_record: a tool-calling retail agent (two orders) and a customer-service agent (two users)."""

from __future__ import annotations

from tests.tracing.helpers import Run

ORDERS = {"orders": [{"order_id": "#W1111111", "total": 2895.55, "status": "pending"},
                     {"order_id": "#W2222222", "total": 52.01, "status": "delivered"}]}


def _wrong(run: Run):
    return [b.step for b in run.report().breaks if b.pattern == "wrong_record"]


def _orders(said: str):
    return Run().call("list_orders", {"user_id": "mia_garcia_4516"}).result("list_orders", ORDERS).reply(said)


def test_one_orders_total_given_to_the_other():
    assert _wrong(_orders("Order #W1111111 costs $52.01.")) == [2]


def test_each_order_with_its_own_total():
    assert _wrong(_orders("Order #W1111111 costs $2895.55 and order #W2222222 costs $52.01.")) == []


def _user(said: str):
    return (Run().call("get_user_details", {"user_id": "mia_garcia_4516"})
            .result("get_user_details", {"user_id": "ivan_johnson_6036", "name": "Ivan Johnson"})
            .reply(said))


def test_the_result_is_another_users_and_the_reply_goes_on():
    assert _wrong(_user("Thanks! I have your account details here. What would you like to do?")) == [2]


def test_the_result_is_another_users_and_the_reply_says_so():
    assert _wrong(_user("That lookup returned a different account, ivan_johnson_6036. Could you check your id?")) == []
