"""The benchmark's corruption generators (bench/corruptions.py) on small synthetic runs.

Django-free: ``pytest tests/bench -p no:django``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import corruptions as C  # noqa: E402

from tracing.core.steps import Step, Trajectory  # noqa: E402


def S(kind: str, text: str = "", tool: str | None = None, args=None) -> Step:  # noqa: N802
    return Step(index=0, kind=kind, text=text, tool=tool, args=args)


def run_of(*steps: Step, task: str = "help the customer", success: bool = True) -> C.Run:
    return C.Run(Trajectory(run_id="r1", task=task, steps=list(steps), success=success))


def user(text: str) -> Step:
    return S("observation", text, tool="user")


def call(tool: str, **args) -> Step:
    return S("action", f"{tool}({json.dumps(args)})", tool=tool, args=args)


def result(tool: str, data) -> Step:
    return S("observation", data if isinstance(data, str) else json.dumps(data), tool=tool)


def reply(text: str) -> Step:
    return S("action", text, tool="respond", args={"content": text})


ORDER_PENDING = {"order_id": "#W1", "user_id": "u_1", "status": "pending", "total": 321.18}
ORDER_CANCELLED = {**ORDER_PENDING, "status": "cancelled"}
ORDER_2 = {"order_id": "#W2", "user_id": "u_1", "status": "delivered", "total": 52.01}


def dialogue() -> C.Run:
    return run_of(
        user("Hi, what is the state of order #W1?"),
        call("get_order_details", order_id="#W1"),
        result("get_order_details", ORDER_PENDING),
        call("get_order_details", order_id="#W2"),
        result("get_order_details", ORDER_2),
        reply("Order #W1 is pending, total 321.18. Order #W2 was delivered."),
        user("Please cancel #W1."),
        call("cancel_pending_order", order_id="#W1"),
        result("cancel_pending_order", ORDER_CANCELLED),
        reply("Your order #W1 has been cancelled."),
    )


def pools_with_errors() -> C.Pools:
    pools = C.Pools(ok_results=['{"x": 1}'], names=["Zanzibar"])
    pools.errors = ["Error: Order not found"]
    pools.errors_by_tool = {"get_order_details": ["Error: Order not found"]}
    pools.failures = list(pools.errors)
    return pools


def build(run: C.Run, kind: str, pools: C.Pools | None = None, end: int | None = None):
    built, fits = C.corrupt(
        run, kind, pools or pools_with_errors(), end or len(run.steps), C.rng_for(1, "s", "r1", kind)
    )
    return built, fits


def test_pairing_handles_parallel_calls():
    run = run_of(call("a", x=1), call("b", y=2), result("a", "1"), result("b", "2"), reply("ok"))
    assert run.pairs == {2: 0, 3: 1}


def test_error_as_success_replaces_a_result_the_reply_builds_on():
    run = dialogue()
    built, fits = build(run, "error_as_success")
    assert fits and built is not None
    steps, expected, _ = built
    assert C.is_statement(steps[expected])
    changed = [p for p, (a, b) in enumerate(zip(run.steps, steps, strict=True)) if a.text != b.text]
    assert len(changed) == 1 and steps[changed[0]].text == "Error: Order not found"
    assert changed[0] < expected


def test_error_as_success_needs_an_error_pool():
    built, fits = build(dialogue(), "error_as_success", pools=C.Pools())
    assert built is None and not fits


def test_empty_as_data_uses_the_shape_of_the_result():
    run = run_of(
        S("thought", "I should list the singers."),
        S("action", "SELECT name FROM singer", tool="sql", args="SELECT name FROM singer"),
        S("observation", "[('Joe Sharp',), ('Timbaland',)]", tool="sql"),
        S("thought", "The singers are Joe Sharp and Timbaland."),
    )
    built, _ = build(run, "empty_as_data")
    steps, expected, _ = built
    assert steps[2].text == "[]" and expected == 3


def test_empty_as_data_skips_silent_commands():
    run = run_of(
        S("action", "mkdir out", tool="bash", args="mkdir out"),
        S("observation", "", tool="bash"),
        S("thought", "Created out."),
    )
    built, fits = build(run, "empty_as_data")
    assert built is None and not fits


def test_wrong_record_takes_the_same_field_of_another_record():
    run = run_of(
        call("get_order_details", order_id="#W1"),
        result("get_order_details", ORDER_PENDING),
        call("get_order_details", order_id="#W2"),
        result("get_order_details", ORDER_2),
        reply("Order #W1 is pending."),
    )
    built, _ = build(run, "wrong_record")
    steps, expected, _ = built
    assert expected == 4 and steps[4].text == "Order #W1 is delivered."
    assert steps[4].args == {"content": "Order #W1 is delivered."}


def test_wrong_record_needs_an_anchor_of_the_record():
    run = run_of(
        call("get_order_details", order_id="#W1"),
        result("get_order_details", ORDER_PENDING),
        call("get_order_details", order_id="#W2"),
        result("get_order_details", ORDER_2),
        reply("One order is pending."),  # which one? not a claim about a record
    )
    built, fits = build(run, "wrong_record")
    assert built is None and not fits


def test_stale_after_update_puts_back_the_old_value():
    run = dialogue()
    assert [u[2:5] for u in C.stale_updates(run)] == [("status", "pending", "cancelled")]
    built, _ = build(run, "stale_after_update")
    steps, expected, _ = built
    assert expected == 9 and steps[9].text == "Your order #W1 has been pending."


def test_items_of_two_orders_are_not_one_record_updated():
    a = {"order_id": "#W1", "items": [{"product_id": "P", "item_id": "I1", "color": "white"}]}
    b = {"order_id": "#W2", "items": [{"product_id": "P", "item_id": "I2", "color": "blue"}]}
    run = run_of(
        call("get_order_details", order_id="#W1"),
        result("get_order_details", a),
        call("get_order_details", order_id="#W2"),
        result("get_order_details", b),
        reply("blue"),
    )
    assert C.stale_updates(run) == []


def test_phantom_call_removes_a_write_reported_as_done():
    run = dialogue()
    cands = list(C.phantom_call(run, C.Pools()))
    sites = sorted(c.site for c in cands)
    assert 9 in sites
    built = next(c for c in cands if c.site == 9).build(C.rng_for(1, "s", "r", "k"))
    steps, expected, _ = built
    assert len(steps) == len(run.steps) - 2 and expected == 7
    assert not any(s.tool == "cancel_pending_order" for s in steps)
    assert steps[expected].text == "Your order #W1 has been cancelled."


def test_rejected_resubmission_copies_the_rejected_submission():
    run = run_of(
        S("action", "def f(): return 1", tool="solution", args="def f(): return 1"),
        S("observation", "Your answer is wrong.\nYou have 3 steps left.", tool="solution"),
        S("thought", "Let me fix it."),
        S("final", "def f(): return 2", tool="solution", args="def f(): return 2"),
    )
    assert C.rejected_submissions(run) == [(0, 3, False)]
    built, _ = build(run, "rejected_resubmission")
    steps, expected, _ = built
    assert expected == 3 and steps[3].kind == "final" and steps[3].args == "def f(): return 1"


def test_identical_resubmission_is_natural_not_a_corruption():
    run = run_of(
        S("action", "submit x", tool="submit", args="x"),
        S("observation", "Submitted flag is incorrect. Keep trying!", tool="submit"),
        S("action", "submit x", tool="submit", args="x"),
    )
    assert C.rejected_submissions(run) == [(0, 2, True)]
    assert build(run, "rejected_resubmission")[0] is None


def test_corruptions_stay_before_the_clean_first_break():
    run = dialogue()
    for kind in C.KINDS:
        built, _ = build(run, kind, end=6)
        if built is not None:
            steps, expected, _ = built
            assert expected <= 6, kind


@pytest.mark.parametrize("kind", C.KINDS)
def test_generators_are_deterministic(kind):
    first = build(dialogue(), kind)[0]
    again = build(dialogue(), kind)[0]
    assert (first is None) == (again is None)
    if first is not None:
        assert [s.text for s in first[0]] == [s.text for s in again[0]] and first[1] == again[1]


def test_false_success_speaks_in_the_runs_own_form():
    run = run_of(
        user("Find order #W9"),
        call("get_order_details", order_id="#W9"),
        result("get_order_details", "Error: Order not found"),
        reply("Sorry, I could not find it."),
    )
    built, _ = build(run, "false_success")
    steps, expected, _ = built
    assert expected == 3 and C.is_reply(steps[3]) and "get_order_details" in steps[3].text


@pytest.mark.parametrize(
    ("verb", "text", "done"),
    [
        ("take", "Now I take a knife (1). Next, I need to go to sinkbasin 1.", True),
        ("take", "Now I find a pan (1). Next, I need to take it.", False),
        ("cancel", "Your order #W1 has been cancelled.", True),
        ("cancel", "Should I cancel the whole order?", False),
        ("modify", "I modified the items of your order.", True),
        ("toggle", "Airplane mode was toggled off.", True),
    ],
)
def test_reports_done(verb, text, done):
    assert C.reports_done(verb, text) is done


def thought(text: str) -> Step:
    return S("thought", text)


def test_changed_claim_draws_names_the_source_never_writes_in_lower_case():
    run = run_of(
        thought("I need to search Jessica Jones."),
        S("action", "Search[Jessica Jones]", tool="Search", args="Jessica Jones"),
        S("observation", "Jessica Jones is a series. Observation shows the state of it.", tool="Search"),
        thought("The series Jessica Jones stars Krysten Ritter. So the observation says the state."),
    )
    pools = C.Pools.of([run])
    # "Observation" is written "observation" too, and "So" opens a sentence: not names.
    assert "Krysten" in pools.names and "Ritter" in pools.names
    assert "Observation" not in pools.names and "State" not in pools.names


@pytest.mark.parametrize(("word", "changed"), [("False", False), ("IndexError", False), ("SIM", False),
                                             ("List", False), ("Zorro", True)])
def test_changed_claim_leaves_literals_classes_codes_and_common_words(word, changed):
    run = run_of(
        thought("I will run it."),
        S("action", "print(f(1))", tool="execute", args="print(f(1))"),
        S("observation", f"Result {word}; a list of things", tool="execute"),
        thought(f"The output is {word} as shown."),
    )
    pools = C.Pools(names=["Zanzibar"], lower_words=frozenset({"list"}))
    assert bool(list(C.changed_claim(run, pools))) is changed


@pytest.mark.parametrize("sentence", [
    "I cannot find anything about Zorro Jones.",
    "The paragraph does not mention Zorro Jones.",
    "Zorro Jones is not mentioned in the observation.",
    "    return Zorro",
])
def test_changed_claim_leaves_absence_and_code(sentence):
    run = run_of(
        thought("I will look."),
        S("action", "Search[Zorro Jones]", tool="Search", args="Zorro Jones"),
        S("observation", "Zorro Jones is a fox.", tool="Search"),
        thought(sentence),
    )
    assert not list(C.changed_claim(run, C.Pools(names=["Zanzibar"])))


def test_changed_claim_changes_the_value_in_the_sentence_it_chose():
    run = run_of(
        thought("I will look."),
        S("action", "Search[Zorro]", tool="Search", args="Zorro"),
        S("observation", "Zorro is a fox from Spain.", tool="Search"),
        thought("Search[Zorro] gave a page.\nSo the fox called Zorro is from Spain."),
    )
    cands = list(C.changed_claim(run, C.Pools(names=["Zanzibar"])))
    built = [c.build(C.rng_for(1, "s", "r1", "changed_claim")) for c in cands]
    texts = {b[0][3].text for b in built if b}
    assert "Search[Zorro] gave a page.\nSo the fox called Zanzibar is from Spain." in texts
