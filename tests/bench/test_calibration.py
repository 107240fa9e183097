"""The calibration bench's demotion and measurement (bench/calibration.py) on
synthetic runs: a pattern that is never right is demoted from the calibration
half's labels, and the held-out half's precision goes up.

Django-free: ``pytest tests/bench -p no:django``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import calibration as B  # noqa: E402

from tracing.core.steps import Step, Trajectory  # noqa: E402

FACT = "Freedonia has a population of 4,200,000 people."
STEPS = [
    Step(index=0, kind="thought", text="I need the population of Freedonia."),
    Step(index=1, kind="action", text="search", tool="search", args={"query": "population of Freedonia"}),
    Step(index=2, kind="observation", text=FACT, tool="search", meta={"status": "ok"}),
    Step(index=3, kind="thought", text="Let me look it up again."),
    Step(index=4, kind="action", text="search", tool="search", args={"query": "population of Freedonia"}),
    Step(index=5, kind="observation", text=FACT, tool="search", meta={"status": "ok"}),
    Step(index=6, kind="final", text="4,200,000"),
]


def _items(n: int) -> list[B.Item]:
    traj = Trajectory(run_id="x", task="What is the population of Freedonia?", steps=STEPS, success=True)
    out = []
    for i in range(n):
        # A succeeded, uncorrupted run that shows a re-query: a false alarm.
        item = B.Item(f"run-{i}", STEPS, traj, None, False)
        item.shown, item.pattern = B._show(item)
        out.append(item)
    return out


def test_a_pattern_never_right_is_demoted_and_the_held_out_half_stops_showing_it():
    items = _items(60)
    assert items[0].shown == 4 and items[0].pattern == "requery"
    demoted, tallies = B.calibrate(items, "src", floor=0.5, min_labels=20)
    calibration = sum(B._half("src", it.key) == "calibration" for it in items)
    assert calibration >= 20 and tallies["requery"].none == calibration and demoted == {"requery"}
    before, after = B.measure(items, "src", demoted, "held-out")
    assert before.shown == before.succeeded_shown == len(items) - calibration and before.right == 0
    assert after.shown == 0 and after.succeeded_shown == 0


def test_too_few_labels_demote_nothing():
    items = _items(10)
    demoted, _ = B.calibrate(items, "src", floor=0.5, min_labels=20)
    assert demoted == frozenset()
