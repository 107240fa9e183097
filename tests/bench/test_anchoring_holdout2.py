"""The corruption makers of bench/anchoring_holdout2.py on small synthetic runs.

Django-free and fast: ``pytest tests/bench/test_anchoring_holdout2.py -p no:django``.
Each kind must change exactly one step, report the step where the first break
belongs, and return None on a run it does not fit.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import anchoring_holdout2 as H  # noqa: E402

from tracing.core.steps import Step, Trajectory  # noqa: E402


def run_of(*steps: tuple, task: str = "a task", source: str = "synthetic", meta: dict | None = None) -> Trajectory:
    built = [Step(index=i, kind=k, text=t, tool=tool, args=args) for i, (k, t, tool, args) in enumerate(steps)]
    return Trajectory(run_id="r1", task=task, steps=built, source=source, meta=meta or {})


def thought(text: str) -> tuple:
    return ("thought", text, None, None)


def act(tool: str, args, text: str | None = None, kind: str = "action") -> tuple:
    if text is None:
        text = f"{tool}({json.dumps(args)})" if isinstance(args, dict) else f"{tool}[{args}]"
    return (kind, text, tool, args)


def obs(tool: str, text: str) -> tuple:
    return ("observation", text, tool, None)


def reply(text: str) -> tuple:
    return ("action", text, "respond", {"content": text})


def user(text: str) -> tuple:
    return ("observation", text, "user", None)


def assert_one_step_changed(traj: Trajectory, case: H.Case) -> None:
    """Only the step at ``case.changed`` differs from the base; indices are kept."""
    assert [s.index for s in case.steps] == [s.index for s in traj.steps]
    for old, new in zip(traj.steps, case.steps, strict=True):
        if old.index == case.changed:
            assert old.to_dict() != new.to_dict()
        else:
            assert old.to_dict() == new.to_dict()


def rng() -> random.Random:
    return random.Random("test")


# --- runs of each kind of agent ---------------------------------------------


def qa_run(answer: str = "2004") -> Trajectory:
    return run_of(
        thought("I need to search Creed (band) and find the year the band disbanded."),
        act("Search", "Creed (band)"),
        obs(
            "Search", "Creed was an American rock band from Tallahassee. Active from 1994 to 2004, and then from 2009."
        ),
        thought("Creed disbanded in 2004, so the answer is 2004."),
        act("Finish", answer, text=answer, kind="final"),
        task="The band of the man Jaclyn Stapp married disbanded in what year?",
    )


def sql_run(
    result: str = "[(3,)]", after: str = "I get a single number, which is the number of nationalities."
) -> Trajectory:
    return run_of(
        thought("I should look at the tables."),
        act("sql", "SHOW TABLES", text="execute[SHOW TABLES]"),
        obs("sql", "[('conductor',), ('orchestra',)]"),
        act(
            "sql",
            "SELECT COUNT(DISTINCT Nationality) FROM conductor",
            text="execute[SELECT COUNT(DISTINCT Nationality) FROM conductor]",
        ),
        obs("sql", result),
        thought(after),
        act("submit", None, text="submit", kind="final"),
        task="Count the different nationalities of conductors.",
    )


def alf_run() -> Trajectory:
    return run_of(
        thought("First I need to find a potato. I check countertop 1."),
        act("go to", "countertop 1", text="go to countertop 1"),
        obs("go to", "On the countertop 1, you see a potato 1, and a mug 2."),
        act("take", "potato 1 from countertop 1", text="take potato 1 from countertop 1"),
        obs("take", "You pick up the potato 1 from the countertop 1."),
        thought("Now I take a potato (1). Next, I need to cool it with fridge 1."),
        act("go to", "fridge 1", text="go to fridge 1"),
        obs("go to", "The fridge 1 is closed."),
        task="cool some potato and put it in countertop.",
        meta={"initial_observation": "You see a countertop 1, a fridge 1, and a microwave 1."},
    )


def webshop_run() -> Trajectory:
    return run_of(
        act("search", "usb microphone"),
        obs(
            "search", "[Back to Search] \nPage 1 (Total results: 50) \n[B0972Q1T8T] \nCosycost USB Microphone \n$32.99"
        ),
        thought("B0972Q1T8T is a usb microphone and it costs less than 50 dollars."),
        act("click", "B0972Q1T8T"),
        obs("click", "Invalid action!"),
        act("click", "Buy Now", kind="final"),
        task="i want a usb microphone, and price lower than 50.00 dollars",
    )


def code_run() -> Trajectory:
    code = "def f(x):\n    return x > 0\n\nprint(f(1))  # it should return True\nprint(f(-1))  # it should return False"
    return run_of(
        thought("I need to return whether x is positive."),
        act("execute", code, text=code),
        obs("execute", "True\nFalse\nYou have 4 steps left and 2 chances to propose solution left."),
        thought("The function has passed the tests and returned the expected results."),
        act("solution", "def f(x):\n    return x > 0", text="def f(x):\n    return x > 0", kind="final"),
        task="Write f(x) that tells whether x is positive.",
    )


CARDS = {
    "user_id": "ana_li_1",
    "payment_methods": {
        "credit_card_1": {"source": "credit_card", "id": "credit_card_1", "brand": "visa", "last_four": "8902"},
        "credit_card_2": {"source": "credit_card", "id": "credit_card_2", "brand": "mastercard", "last_four": "4336"},
    },
}


def dialogue_run() -> Trajectory:
    order_a = {"order_id": "#W4923227", "status": "pending", "items": [{"name": "Speaker", "price": 321.18}]}
    order_b = {**order_a, "status": "cancelled"}
    return run_of(
        user("Hi, which card did I use, and can you cancel my order #W4923227?"),
        act("get_user_details", {"user_id": "ana_li_1"}),
        obs("get_user_details", json.dumps(CARDS)),
        reply("You have a Visa ending in 8902 on file."),
        act("get_order_details", {"order_id": "#W4923227"}),
        obs("get_order_details", json.dumps(order_a)),
        act("cancel_pending_order", {"order_id": "#W4923227", "reason": "no longer needed"}),
        obs("cancel_pending_order", json.dumps(order_b)),
        reply("Your order #W4923227 has been cancelled."),
        user("Thanks!"),
    )


# --- each kind ----------------------------------------------------------------


def test_value_swap_misstates_the_observed_year_in_the_thought():
    traj = qa_run()
    case = H.make_case("value_swap", traj, rng())
    assert case is not None and case.kind == "value_swap"
    assert case.changed == case.expected and traj.steps[case.expected].kind in ("thought", "final")
    assert_one_step_changed(traj, case)
    assert "2004" not in case.after
    new_values = [v for v in H.value_tokens(case.after) if v != "2004"]
    assert new_values and all(not H.contains(H.corpus_of(traj), v) for v in new_values)


def test_value_swap_in_alfworld_changes_the_object_number():
    traj = alf_run()
    case = H.make_case("value_swap", traj, rng())
    assert case is not None and case.expected == 5
    assert_one_step_changed(traj, case)
    assert "potato (1)" not in case.after and case.after.startswith("Now I take a potato (")


def test_value_swap_does_not_fit_a_run_without_observed_values():
    traj = run_of(
        thought("I will search it."),
        act("Search", "Creed"),
        obs("Search", "Creed is a band."),
        thought("Creed is a band."),
        act("Finish", "band", text="band", kind="final"),
    )
    assert H.make_case("value_swap", traj, rng()) is None


def test_answer_swap_takes_an_answer_from_another_run_absent_here():
    traj = qa_run(answer="Scott Stapp")
    traj.steps[2].text += " Its singer was Scott Stapp."
    pool = ["Jim Morrison", "Scott Stapp", "Creed"]
    case = H.make_case("answer_swap", traj, rng(), pool)
    assert case is not None and case.expected == 4 and case.changed == 4
    assert_one_step_changed(traj, case)
    assert case.steps[4].args == "Jim Morrison" and case.steps[4].text == "Jim Morrison"


def test_answer_swap_does_not_fit_numbers_labels_or_an_empty_pool():
    assert H.make_case("answer_swap", qa_run(answer="2004"), rng(), ["Jim Morrison"]) is None
    assert H.make_case("answer_swap", qa_run(answer="SUPPORTS"), rng(), ["Jim Morrison"]) is None
    traj = qa_run(answer="Scott Stapp")
    traj.steps[2].text += " Its singer was Scott Stapp."
    assert H.make_case("answer_swap", traj, rng(), []) is None


def test_obs_failure_breaks_at_the_step_that_reports_the_lost_result():
    traj = qa_run()
    case = H.make_case("obs_failure", traj, rng())
    assert case is not None
    assert case.changed == 2 and case.expected == 3
    assert_one_step_changed(traj, case)
    assert case.steps[2].text == "Could not find [Creed (band)]. Similar: []."


def test_obs_failure_on_sql_empties_the_result():
    traj = sql_run()
    case = H.make_case("obs_failure", traj, rng())
    assert case is not None and (case.changed, case.expected) == (4, 5)
    assert case.steps[4].text == "[]"
    assert_one_step_changed(traj, case)


def test_obs_failure_in_alfworld_says_nothing_happens():
    traj = alf_run()
    case = H.make_case("obs_failure", traj, rng())
    assert case is not None and (case.changed, case.expected) == (4, 5)
    assert case.steps[4].text == "Nothing happens."


def test_obs_failure_skips_a_next_step_that_already_owns_up():
    traj = sql_run(after="There is no such column, I should try again.")
    assert H.make_case("obs_failure", traj, rng()) is None


def test_claim_after_error_rewrites_the_thought_after_an_empty_result():
    traj = sql_run(result="[]", after="The query returned nothing; I should check the columns.")
    case = H.make_case("claim_after_error", traj, rng())
    assert case is not None and case.changed == case.expected == 5
    assert_one_step_changed(traj, case)
    assert "returned the rows I need" in case.after


def test_claim_after_error_does_not_fit_a_run_without_a_failure():
    assert H.make_case("claim_after_error", sql_run(), rng()) is None


def test_unseen_argument_in_alfworld_takes_an_object_nothing_showed():
    traj = alf_run()
    case = H.make_case("unseen_argument", traj, rng())
    assert case is not None and case.changed == case.expected
    assert traj.steps[case.expected].kind == "action"
    assert_one_step_changed(traj, case)
    new = case.steps[case.expected]
    assert new.text == new.text.strip() and new.args in new.text
    assert not H.contains(H.corpus_of(traj), new.args.split(" from ")[0] if " from " in new.args else new.args)


def test_unseen_argument_in_a_dialogue_changes_the_id_in_args_and_text():
    traj = dialogue_run()
    case = H.make_case("unseen_argument", traj, rng())
    assert case is not None and case.changed == case.expected
    assert_one_step_changed(traj, case)
    new = case.steps[case.expected]
    old = traj.steps[case.expected]
    changed_vals = [v for v in H._string_values(new.args) if v not in H._string_values(old.args)]
    assert len(changed_vals) == 1 and changed_vals[0] in new.text
    assert not H.contains(H.corpus_of(traj), changed_vals[0])


def test_unseen_argument_on_sql_renames_a_listed_table():
    traj = sql_run()
    case = H.make_case("unseen_argument", traj, rng())
    assert case is not None and case.changed == case.expected == 3
    assert_one_step_changed(traj, case)
    new = case.steps[3].args.rsplit(" ", 1)[1]
    assert new in H._sql_variants("conductor") and new in case.steps[3].text
    assert not H.contains(H.corpus_of(traj), new)  # "conductors" is in the task, so not that one


def test_unseen_argument_does_not_fit_qa_or_code():
    assert H.make_case("unseen_argument", qa_run(), rng()) is None
    assert H.make_case("unseen_argument", code_run(), rng()) is None


def test_wrong_record_quotes_the_other_cards_digits():
    traj = dialogue_run()
    case = H.make_case("wrong_record", traj, rng())
    assert case is not None and case.changed == case.expected == 3
    assert_one_step_changed(traj, case)
    assert case.after == "You have a Visa ending in 4336 on file."
    assert case.steps[3].args == {"content": case.after}


def test_wrong_record_does_not_fit_other_agents():
    assert H.make_case("wrong_record", qa_run(), rng()) is None


def test_stale_value_states_the_status_the_cancellation_replaced():
    traj = dialogue_run()
    case = H.make_case("stale_value", traj, rng())
    assert case is not None and case.changed == case.expected == 8
    assert_one_step_changed(traj, case)
    assert case.after == "Your order #W4923227 is still pending."


def test_stale_value_needs_an_update():
    traj = dialogue_run()
    traj.steps[7].text = traj.steps[5].text  # the second result equals the first
    assert H.make_case("stale_value", traj, rng()) is None


def test_repeat_rejected_copies_the_rejected_click():
    traj = webshop_run()
    case = H.make_case("repeat_rejected", traj, rng())
    assert case is not None and case.changed == case.expected == 5
    assert_one_step_changed(traj, case)
    new = case.steps[5]
    assert (new.tool, new.args, new.text) == ("click", "B0972Q1T8T", "click[B0972Q1T8T]")


def test_repeat_rejected_does_not_fit_a_run_without_rejection():
    assert H.make_case("repeat_rejected", qa_run(), rng()) is None


def test_phantom_call_claims_a_search_before_making_it():
    traj = qa_run()
    case = H.make_case("phantom_call", traj, rng())
    assert case is not None and case.changed == case.expected == 0
    assert_one_step_changed(traj, case)
    assert case.after == "I already searched [Creed (band)], and it confirms what I need."


def test_phantom_call_in_a_dialogue_claims_an_action_never_taken():
    traj = dialogue_run()
    case = H.make_case("phantom_call", traj, rng())
    assert case is not None and case.changed == case.expected
    assert_one_step_changed(traj, case)
    assert case.steps[case.expected].tool == "respond" and case.steps[case.expected].args == {"content": case.after}
    assert case.after in {t.format(oid="#W4923227") for t in H._RETAIL_PHANTOMS.values()}
    if case.expected > 6:  # once cancel_pending_order was called, cancelling is no phantom
        assert "cancelled" not in case.after


def test_phantom_call_does_not_fit_a_run_whose_thoughts_follow_the_calls():
    traj = run_of(
        act("Search", "Creed"),
        obs("Search", "Creed is a band."),
        thought("Creed is a band."),
        act("Finish", "band", text="band", kind="final"),
    )
    assert H.make_case("phantom_call", traj, rng()) is None


def test_misread_output_flips_a_printed_value_the_next_thought_calls_a_pass():
    traj = code_run()
    case = H.make_case("misread_output", traj, rng())
    assert case is not None and (case.changed, case.expected) == (2, 3)
    assert_one_step_changed(traj, case)
    lines = case.steps[2].text.split("\n")
    assert lines[:2] in (["False", "False"], ["True", "True"])
    assert lines[2].startswith("You have 4 steps left")


def test_misread_output_does_not_fit_without_expected_comments():
    traj = code_run()
    traj.steps[1].args = traj.steps[1].text = "def f(x):\n    return x > 0\n\nprint(f(1))\nprint(f(-1))"
    assert H.make_case("misread_output", traj, rng()) is None


def test_a_kind_outside_the_agents_domain_returns_none():
    assert H.make_case("misread_output", qa_run(), rng()) is None
    assert H.make_case("stale_value", alf_run(), rng()) is None


# --- scoring and determinism --------------------------------------------------


@pytest.mark.parametrize(
    ("first_break", "expected", "outcome"),
    [(None, 5, "missed"), (5, 5, "exact"), (3, 5, "near"), (7, 5, "near"), (2, 5, "early"), (8, 5, "late")],
)
def test_outcome(first_break, expected, outcome):
    assert H.outcome(first_break, expected) == outcome


def _signature(cases: list[H.Case]) -> list[tuple]:
    return [(c.run_id, c.kind, c.changed, c.expected, c.after) for c in cases]


def test_generate_is_deterministic_for_a_seed():
    runs = [qa_run(), sql_run(), alf_run(), webshop_run(), code_run(), dialogue_run()]
    for i, r in enumerate(runs):
        r.run_id = f"r{i}"
    a = H.generate(runs, "synthetic", 23, 2)
    b = H.generate(runs, "synthetic", 23, 2)
    assert a and _signature(a) == _signature(b)


def test_generate_uses_only_clean_bases():
    runs = [qa_run(), sql_run()]
    runs[0].run_id, runs[1].run_id = "qa", "sql"
    cases = H.generate(runs, "synthetic", 23, 5, is_clean=lambda t: t.run_id == "sql")
    assert cases and {c.run_id for c in cases} == {"sql"}


SCRIPT = """
import sys, json
sys.path.insert(0, {bench!r})
sys.path.insert(0, {tests!r})
import test_anchoring_holdout2 as T
import anchoring_holdout2 as H
runs = [T.qa_run(), T.sql_run(), T.alf_run(), T.webshop_run(), T.code_run(), T.dialogue_run()]
for i, r in enumerate(runs):
    r.run_id = "r%d" % i
print(json.dumps(T._signature(H.generate(runs, "synthetic", 7, 3))))
"""


def test_generate_does_not_depend_on_the_hash_seed():
    script = SCRIPT.format(bench=str(BENCH), tests=str(Path(__file__).resolve().parent))
    outs = []
    for seed in ("0", "1"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        root = str(BENCH.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
        outs.append(done.stdout)
    assert outs[0] == outs[1] and json.loads(outs[0])


def test_a_value_is_replaced_as_a_whole_token():
    assert (
        H.replace_token("a 15 GB cap (you are at 15.1 GB), $15.", "15", "18")
        == "a 18 GB cap (you are at 15.1 GB), $18."
    )
    assert not H.contains("it costs 32.99", "32") and H.contains("it costs $32.99.", "32.99")


def test_alfworld_ranges_are_not_objects():
    found = H.alf_objects("Now I find a potato (1). I check stoveburner (1-4), countertop 2 and cabinet 1-6.")
    assert [(name, n) for _w, name, n in found] == [("potato", "1"), ("countertop", "2")]
