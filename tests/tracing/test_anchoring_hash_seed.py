"""The anchor report does not depend on the interpreter's hash seed.

Strings hash differently in every process (PYTHONHASHSEED), so iterating a
set of them gives another order each time. Where that order decides something
— which 40 numbers of a long result stay in the bounded arithmetic pool,
which ids a reason names, which of two equal fits is "the record meant" —
the same run was judged differently by the worker and the bench. Each probe
below changed with the seed before the iteration was sorted (found by
bench/anchoring_eval.py --dump on tau2 retail runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ("0", "1", "2", "3")

PROBES = """
import json, random
from tests.tracing.helpers import Run
from tracing.core.anchoring.evidence import ARITHMETIC_POOL, Evidence
from tracing.core.anchoring.salience import extract

# A result with more numbers than the arithmetic pool holds; products of its
# numbers are grounded only when both factors stayed in the pool.
rng = random.Random(3)
prices = sorted({round(rng.uniform(2, 90), 2) for _ in range(3 * ARITHMETIC_POOL)})
evidence = Evidence()
listing = ", ".join(f"${p}" for p in prices)
evidence.add(extract(listing), listing)
products = [evidence.number_supported(f"{round(a * b, 2)}") for a in prices[::7] for b in prices[3::11]]

# More unseen ids than the reason names (three).
ids = (Run().user("Hi, I'm Lei Li, zip 98193. Which orders do I have?")
       .call("find_user_id_by_name_zip", {"first_name": "Lei", "last_name": "Li", "zip": "98193"})
       .result("find_user_id_by_name_zip", "lei_li_6575")
       .call("get_user_details", {"user_id": "lei_li_6575"})
       .result("get_user_details", {"user_id": "lei_li_6575", "orders": ["#W1000001"]})
       .reply("You have the orders #W2890441, #W1267569, #W5416052, #W3916020 and #W4689314.")).report()

# Two variants fit the description equally, each but for one field.
lamp = {"name": "Desk Lamp", "product_id": "6817146515", "variants": {
    "5320792178": {"item_id": "5320792178", "price": 135.24,
                   "options": {"color": "black", "brightness": "medium", "power source": "AC adapter"}},
    "7624783998": {"item_id": "7624783998", "price": 154.17,
                   "options": {"color": "black", "brightness": "high", "power source": "AC adapter"}},
    "1569765161": {"item_id": "1569765161", "price": 143.02,
                   "options": {"color": "silver", "brightness": "low", "power source": "AC adapter"}}}}
mixed = (Run().user("I want to exchange my desk lamp (product 6817146515) for a black one.")
         .call("get_product_details", {"product_id": "6817146515"})
         .result("get_product_details", lamp)
         .reply("Here is the black option I found:\\n- Black, medium brightness, AC adapter (available, $154.17)\\n"
                "Shall I go ahead?")).report()

print(json.dumps({"products": products, "ids": [ids.first_break, ids.reason],
                  "mixed": [mixed.first_break, mixed.reason]}))
"""


def _probe(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PROBES], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def test_the_same_runs_are_judged_alike_under_any_hash_seed():
    first, *others = [_probe(seed) for seed in SEEDS]
    for seed, other in zip(SEEDS[1:], others, strict=True):
        assert other == first, f"PYTHONHASHSEED={seed} judged differently from {SEEDS[0]}"
    # The probes reach the code they are about: some products grounded, some
    # not; a break with a reason on both runs.
    assert any(first["products"]) and not all(first["products"])
    assert first["ids"][0] == 5 and "uses W" in first["ids"][1]
    assert first["mixed"][0] == 3 and "belongs to" in first["mixed"][1]
