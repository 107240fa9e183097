"""The corruption makers of bench/anchoring_holdout3.py (not the detector).

Each maker must change exactly one step or insert exactly one, say where, keep
the run valid, and give nothing on a run where its lapse does not fit.
"""

from __future__ import annotations

import random
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import anchoring_holdout3 as h3  # noqa: E402 -- needs bench/ on the path

from tests.eval_data import eval_runs  # noqa: E402
from tracing.core.steps import Step, Trajectory, read_jsonl, trajectory_from_dict  # noqa: E402


def rng() -> random.Random:
    return random.Random("test")


def run(task: str, *steps: tuple, run_id: str = "r1", **kw) -> Trajectory:
    """Steps as (kind, text, tool, args); indices 0..n-1."""
    built = [Step(index=i, kind=k, text=t, tool=tool, args=args) for i, (k, t, tool, args) in enumerate(steps)]
    return Trajectory(run_id=run_id, task=task, steps=built, success=True, **kw)


def reply(text: str) -> tuple:
    return ("action", text, "respond", {"content": text})


def user(text: str) -> tuple:
    return ("observation", text, "user", None)


# ---------------------------------------------------------------------------
# Small runs, one per shape of agent in shared/eval
# ---------------------------------------------------------------------------

WIKI = run(
    "Which magazine was started first Arthur's Magazine or First for Women?",
    ("thought", "I need to search Arthur's Magazine and First for Women.", None, None),
    ("action", "Search[Arthur's Magazine]", "Search", "Arthur's Magazine"),
    ("observation", "Arthur's Magazine (1844-1846) was an American literary periodical.", "Search", None),
    ("thought", "Arthur's Magazine was started in 1844. I need to search First for Women next.", None, None),
    ("action", "Search[First for Women]", "Search", "First for Women"),
    ("observation", "Could not find [First for Women]. Similar: ['First for Women (magazine)']", "Search", None),
    ("thought", "I can search First for Women (magazine) instead.", None, None),
    ("action", "Search[First for Women (magazine)]", "Search", "First for Women (magazine)"),
    (
        "observation",
        "First for Women is a woman's magazine published by Bauer Media Group. It was started in 1989.",
        "Search",
        None,
    ),
    (
        "thought",
        "First for Women was started in 1989. 1844 < 1989, so Arthur's Magazine was started first.",
        None,
        None,
    ),
    ("final", "Arthur's Magazine", "Finish", "Arthur's Magazine"),
)

FEVER = run(
    "Paramore is from Tennessee.",
    ("thought", "I should search for Paramore.", None, None),
    ("action", "Search[Paramore]", "Search", "Paramore"),
    ("observation", "Paramore is an American rock band from Franklin, Tennessee, formed in 2004.", "Search", None),
    (
        "thought",
        "The observation says the band was formed in 2004 in Franklin, Tennessee, so the claim is true.",
        None,
        None,
    ),
    ("final", "SUPPORTS", "Finish", "SUPPORTS"),
)

HOUSEHOLD = run(
    "cool some pan and put it in countertop.",
    ("thought", "First I need to find a pan.", None, None),
    ("action", "go to stoveburner 1", "go to", "stoveburner 1"),
    ("observation", "On the stoveburner 1, you see a pot 1.", "go to", None),
    ("action", "go to stoveburner 2", "go to", "stoveburner 2"),
    ("observation", "On the stoveburner 2, you see a pan 1.", "go to", None),
    ("thought", "Now I find a pan (1). Next, I need to take it.", None, None),
    ("action", "take pan 1 from stoveburner 2", "take", "pan 1 from stoveburner 2"),
    ("observation", "You pick up the pan 1 from the stoveburner 2.", "take", None),
    ("action", "cool pan 1 with fridge 1", "cool", "pan 1 with fridge 1"),
    ("observation", "Nothing happens.", "cool", None),
    ("action", "go to fridge 1", "go to", "fridge 1"),
)

SHOP = run(
    "i want a noise cancelling usb microphone, and price lower than 50.00 dollars",
    ("action", "search[usb microphone]", "search", "usb microphone"),
    (
        "observation",
        "[Back to Search] \nPage 1 (Total results: 50) \n[Next >] \n[B0972Q1T8T] \nCosycost USB Microphone \n$32.99 \n"
        "[B072L2D6LY] \nAndrea USB Headset \n$34.59 \n[B071H84LTJ] \nStudio Condenser Mic \n$89.00 \n",
        "search",
        None,
    ),
    (
        "thought",
        "B0972Q1T8T and B072L2D6LY are usb microphones less then 50 dollars. I can check B0972Q1T8T first.",
        None,
        None,
    ),
    ("action", "click[B0972Q1T8T]", "click", "B0972Q1T8T"),
    (
        "observation",
        "[Back to Search] \n[< Prev] \ncolor [black][white]\nsize [2 pack][4 pack]\nCosycost USB Microphone \nPrice: $32.99 \n[Buy Now]",
        "click",
        None,
    ),
    ("thought", "For a usb microphone, the item has options 'black' and '2 pack' and seems good to buy.", None, None),
    ("action", "click[2 pack]", "click", "2 pack"),
    ("observation", "Invalid action!", "click", None),
    ("final", "click[Buy Now]", "click", "Buy Now"),
)

SQL = run(
    "How many cars have more than 4 cylinders?",
    ("thought", "I should check what tables there are.", None, None),
    ("action", "execute[DESC car_names]", "sql", "DESC car_names"),
    ("observation", "[('MakeId', 'int', 'NO', 'PRI', None, ''), ('Model', 'text', 'YES', '', None, '')]", "sql", None),
    ("thought", "The `car_names` table has a `Model` column.", None, None),
    ("action", "execute[DESC cars_data]", "sql", "DESC cars_data"),
    ("observation", "[('Id', 'int', 'NO', 'PRI', None, ''), ('Cylinders', 'int', 'YES', '', None, '')]", "sql", None),
    ("thought", "The `cars_data` table has a `Cylinders` column.", None, None),
    (
        "action",
        "execute[SELECT COUNT(*) FROM cars WHERE cylinders > 4]",
        "sql",
        "SELECT COUNT(*) FROM cars WHERE cylinders > 4",
    ),
    ("observation", "Error executing query: Table 'car_1.cars' doesn't exist", "sql", None),
    ("thought", "The cars table does not exist.", None, None),
    (
        "action",
        "execute[SELECT COUNT(*) FROM cars_data WHERE Cylinders > 9]",
        "sql",
        "SELECT COUNT(*) FROM cars_data WHERE Cylinders > 9",
    ),
    ("observation", "[]", "sql", None),
    ("thought", "The query returns an empty list.", None, None),
    (
        "action",
        "execute[SELECT COUNT(*) FROM cars_data WHERE Cylinders > 4]",
        "sql",
        "SELECT COUNT(*) FROM cars_data WHERE Cylinders > 4",
    ),
    ("observation", "[(195,)]", "sql", None),
    ("thought", "I get a single number. This should be the answer.", None, None),
    ("final", "submit", "submit", None),
)

CTF = run(
    "Find the flag.",
    ("action", "cat flag.txt", "bash", "cat flag.txt"),
    ("observation", "picoCTF{s4n1ty_v3r1f13d_2fd6ed29}\n", "bash", None),
    ("final", "submit picoCTF{s4n1ty_v3r1f13d_2fd6ed29}", "submit", "picoCTF{s4n1ty_v3r1f13d_2fd6ed29}"),
)

CODE = run(
    "Write a function add(a, b).\nassert add(1, 2) == 3",
    ("thought", "I will write the function and test it.", None, None),
    (
        "action",
        "def add(a, b):\n    return a - b\nassert add(1, 2) == 3",
        "execute",
        "def add(a, b):\n    return a - b\nassert add(1, 2) == 3",
    ),
    (
        "observation",
        "AssertionError                            Traceback (most recent call last)\nAssertionError:\n",
        "execute",
        None,
    ),
    ("thought", "The function subtracts. I will submit anyway.", None, None),
    ("action", "def add(a, b):\n    return a - b", "solution", "def add(a, b):\n    return a - b"),
    ("observation", "Your answer is wrong.\nYou have 1 steps left.", "solution", None),
    ("thought", "I should add instead.", None, None),
    ("final", "def add(a, b):\n    return a + b", "solution", "def add(a, b):\n    return a + b"),
)

ORDER = (
    '{"order_id": "#W4923227", "status": "pending", "items": [{"name": "Bluetooth Speaker", "price": 321.18}], '
    '"payment_history": [{"amount": 321.18, "payment_method_id": "credit_card_8554680"}]}'
)
CARDS = (
    '{"user_id": "isabella_lopez_6490", "payment_methods": {"a": {"brand": "visa", "last_four": "8902"}, '
    '"b": {"brand": "mastercard", "last_four": "4336"}}, "orders": ["#W4923227"]}'
)
DIALOGUE = run(
    "You want to cancel your order.",
    user("Hi, I want to cancel my order."),
    reply("Sure. Could you give me your email?"),
    user("isabella@example.com"),
    ("action", "get_user_details(...)", "get_user_details", {"user_id": "isabella_lopez_6490"}),
    ("observation", CARDS, "get_user_details", None),
    ("action", "get_order_details(...)", "get_order_details", {"order_id": "#W4923227"}),
    ("observation", ORDER, "get_order_details", None),
    reply(
        "Your order #W4923227 is currently pending, total $321.18, paid with your Mastercard ending in 4336. Shall I cancel it?"
    ),
    user("Yes, please cancel it. It still doesn't show as cancelled on my side."),
    (
        "action",
        "cancel_pending_order(...)",
        "cancel_pending_order",
        {"order_id": "#W4923227", "reason": "no longer needed"},
    ),
    ("observation", "Error: order cannot be cancelled", "cancel_pending_order", None),
    reply("I'm sorry, the order could not be cancelled."),
    run_id="retail-default-x-task1-t0",
)

SHAPES = {
    "wiki": WIKI,
    "fever": FEVER,
    "household": HOUSEHOLD,
    "shop": SHOP,
    "sql": SQL,
    "ctf": CTF,
    "code": CODE,
    "dialogue": DIALOGUE,
}

# Which hand-made run each kind must fit (and all the others it must not break on).
FITS = {
    "misquoted_number": ["wiki", "fever", "household", "shop", "sql", "dialogue"],
    "status_flipped": ["dialogue"],
    "other_record": ["shop", "sql", "dialogue"],
    "success_after_failure": ["household", "code", "sql", "dialogue"],
    "reads_empty_result": ["wiki", "sql"],
    "unmade_call_claimed": ["code", "dialogue"],
    "unseen_thing_claimed": ["household"],
    "answer_contradicts_reasoning": ["wiki", "fever"],
    "unsupported_final_value": ["ctf"],
    "resubmits_rejected": ["code"],
}
# Where the kind cannot fit at all (nothing of its sort in that run).
NEVER = {
    "status_flipped": ["wiki", "household", "shop", "sql", "code", "ctf"],
    "other_record": ["wiki", "fever", "household", "code", "ctf"],
    "success_after_failure": ["wiki", "fever", "shop", "ctf"],
    "reads_empty_result": ["household", "shop", "code", "dialogue", "ctf"],
    "unmade_call_claimed": ["wiki", "fever", "household", "shop", "sql", "ctf"],
    "unseen_thing_claimed": ["wiki", "fever", "shop", "sql", "code", "dialogue", "ctf"],
    "answer_contradicts_reasoning": ["household", "shop", "sql", "code", "dialogue", "ctf"],
    "unsupported_final_value": ["fever", "household", "shop", "sql", "code", "dialogue"],
    "resubmits_rejected": ["wiki", "fever", "household", "shop", "sql", "dialogue", "ctf"],
    "misquoted_number": ["code", "ctf"],
}


def assert_one_lapse(base: Trajectory, made: h3.Made) -> None:
    """Exactly one step rewritten, or one inserted; ``made.index`` points at it; the run is valid."""
    old, new = [asdict(s) for s in base.steps], [asdict(s) for s in made.steps]
    if len(new) == len(old):
        changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        assert len(changed) == 1, changed
        assert new[changed[0]]["index"] == made.index
        assert new[changed[0]]["kind"] == old[changed[0]]["kind"]
    else:
        assert len(new) == len(old) + 1
        pos = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(old))
        assert new[pos]["index"] == made.index
        assert new[pos]["kind"] == "thought"
        assert new[:pos] == old[:pos]
        assert [dict(s, index=s["index"] + 1) for s in old[pos:]] == new[pos + 1 :]
    assert made.note
    indices = [s.index for s in made.steps]
    assert indices == sorted(set(indices))
    line = {
        "run_id": base.run_id,
        "task": base.task,
        "steps": [
            {"index": s.index, "kind": s.kind, "content": s.text, "tool": s.tool, "args": s.args} for s in made.steps
        ],
    }
    assert [s.index for s in trajectory_from_dict(line).steps] == indices


@pytest.mark.parametrize(("kind", "shape"), [(k, s) for k, shapes in FITS.items() for s in shapes])
def test_maker_makes_one_lapse_where_it_fits(kind: str, shape: str) -> None:
    base = SHAPES[shape]
    made = h3.KINDS[kind](base, rng())
    assert made is not None, f"{kind} should fit the {shape} run"
    assert_one_lapse(base, made)


@pytest.mark.parametrize(("kind", "shape"), [(k, s) for k, shapes in NEVER.items() for s in shapes])
def test_maker_gives_nothing_where_it_does_not_fit(kind: str, shape: str) -> None:
    assert h3.KINDS[kind](SHAPES[shape], rng()) is None


def test_makers_do_not_touch_their_input() -> None:
    for shape, base in SHAPES.items():
        before = [asdict(s) for s in base.steps]
        for maker in h3.KINDS.values():
            maker(base, rng())
        assert [asdict(s) for s in base.steps] == before, shape


def test_every_kind_is_made_somewhere_and_sources_name_known_kinds() -> None:
    assert set(FITS) == set(h3.KINDS)
    assert {k for kinds in h3.SOURCE_KINDS.values() for k in kinds} == set(h3.KINDS)
    assert set(h3.SOURCE_KINDS) == set(h3.SOURCES)


def test_what_the_lapses_say() -> None:
    """Spot checks that the lapse contradicts the observation, not only its wording."""
    made = h3.misquoted_number(FEVER, rng())
    assert "2004" not in made.steps[3].text
    made = h3.answer_contradicts_reasoning(WIKI, rng())
    assert made.steps[-1].text == "First for Women" and made.steps[-1].args == "First for Women"
    made = h3.other_record(SHOP, rng())
    assert "B071H84LTJ" in made.steps[2].text  # listed at $89, over the budget of 50
    made = h3.status_flipped(DIALOGUE, rng())
    assert "is currently delivered" in made.steps[7].text and made.steps[7].args["content"] == made.steps[7].text
    made = h3.unsupported_final_value(CTF, rng())
    assert made.steps[-1].args not in CTF.steps[1].text
    made = h3.resubmits_rejected(CODE, rng())
    assert made.steps[-1].text == CODE.steps[4].args


def test_a_failed_take_is_not_turned_into_a_claim() -> None:
    """A take that got "Nothing happens." usually follows an imagined object (a lapse of the run's own)."""
    base = run(
        "cool some pan and put it in countertop.",
        ("action", "take pan 1 from stoveburner 2", "take", "pan 1 from stoveburner 2"),
        ("observation", "Nothing happens.", "take", None),
    )
    assert h3.success_after_failure(base, rng()) is None


def test_cases_are_deterministic_and_one_per_task(tmp_path: Path) -> None:
    runs = [FEVER, run(FEVER.task, *[(s.kind, s.text, s.tool, s.args) for s in FEVER.steps], run_id="r2")]

    class AllClean(h3.CleanBases):
        def is_clean(self, source: str, traj: Trajectory) -> bool:
            return True

    first = [(c.kind, c.run_id, c.expected) for c in h3.make_cases("react_fever", runs, AllClean(), 31, 20)]
    again = [(c.kind, c.run_id, c.expected) for c in h3.make_cases("react_fever", runs, AllClean(), 31, 20)]
    assert first == again
    assert len({(kind, run_id) for kind, run_id, _ in first}) == len(first)
    assert all(sum(k == kind for k, _, _ in first) == 1 for kind, _, _ in first)  # the rerun shares the task


def test_score() -> None:
    assert h3.score(5, 5) == {"exact", "within1"}
    assert h3.score(5, 6) == {"within1"}
    assert h3.score(5, 4) == {"within1", "early"}
    assert h3.score(5, 1) == {"early"}
    assert h3.score(5, None) == {"missed"}


@pytest.mark.parametrize(
    ("source", "run_id"),
    [
        ("react_exemplars", "hotpotqa-0"),
        ("react_exemplars", "alfworld-react_clean_1"),
        ("tau2_retail_telecom", "retail-default-gpt-4.1-task40-t0"),
        ("mint_coding", "humaneval-0-gpt-4-0613"),
    ],
)
def test_real_runs(source: str, run_id: str) -> None:
    base = next((t for t in read_jsonl(eval_runs(source)) if t.run_id == run_id), None)
    if base is None:
        pytest.skip(f"{run_id} not in {source}")
    made_any = False
    for kind in h3.SOURCE_KINDS[source]:
        made = h3.KINDS[kind](base, rng())
        if made is not None:
            made_any = True
            assert_one_lapse(base, made)
    assert made_any


# ---------------------------------------------------------------------------
# Junk: any text in any step, no maker may crash, and what it makes is one lapse
# ---------------------------------------------------------------------------

junk = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "",
            "Nothing happens.",
            "Invalid action!",
            "[]",
            "[(3,)]",
            "Error: x",
            "Could not find [x]. Similar: []",
            "Traceback (most recent call last)\nValueError: x",
            "Your answer is wrong.",
            '{"status": "pending", "order_id": "#W1", "price": 1.5}',
            "[" * 3000,
            "'a' and '7' (pack of 1) is currently pending 12, 1999",
            "picoCTF{}",
            "you see a pan 1",
        ]
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(sorted(SHAPES)), texts=st.lists(junk, min_size=1, max_size=20), task=junk)
def test_makers_survive_junk(shape: str, texts: list[str], task: str) -> None:
    base = SHAPES[shape]
    steps = [
        Step(
            index=s.index,
            kind=s.kind,
            text=texts[i % len(texts)],
            tool=s.tool,
            args=texts[i % len(texts)] if isinstance(s.args, str) else s.args,
        )
        for i, s in enumerate(base.steps)
    ]
    junk_run = Trajectory(run_id=base.run_id, task=task, steps=steps, success=True)
    for maker in h3.KINDS.values():
        made = maker(junk_run, rng())
        if made is not None:
            assert_one_lapse(junk_run, made)
