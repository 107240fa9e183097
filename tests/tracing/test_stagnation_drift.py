from __future__ import annotations

from tests.tracing.helpers import act, obs, thought
from tracing.core.detectors.drift import (
    DRIFT_CHECK_EVERY,
    DRIFT_MAX_GOAL_TERMS,
    DRIFT_MIN_GAIN,
    DRIFT_PATIENCE,
    DriftDetector,
    goal_terms,
)
from tracing.core.detectors.drift import scan as drift_scan
from tracing.core.detectors.stagnation import STAGNATION_K, StagnationDetector
from tracing.core.detectors.stagnation import scan as stag_scan
from tracing.core.steps import Step


def test_stagnation_k_both_sides():
    det = StagnationDetector()
    sigs = [det.update(i, False) for i in range(STAGNATION_K)]
    assert not sigs[-2].flag and sigs[-2].streak == STAGNATION_K - 1
    assert sigs[-1].flag and sigs[-1].since_step == 0


def test_progress_resets_streak():
    det = StagnationDetector(k=2)
    det.update(0, False)
    assert det.update(1, True).streak == 0
    assert det.update(2, False).since_step == 2


def test_stagnation_scan_counts_errors_and_empty():
    steps = [
        act(0, "s", "a"),
        obs(1, "Some real content about Paris and the tower"),
        act(2, "s", "b"),
        obs(3, "No results"),
        Step(index=4, kind="error", text="could not parse"),
        act(7, "s", "c"),
        obs(8, "Nothing happens."),
    ]
    sigs = stag_scan(steps)
    assert [s.streak for s in sigs] == [0, 1, 2, 3]


def _drift_run(goal: str, obs_texts: list[str], every: int = 2, patience: int = 2):
    det = DriftDetector(goal=goal, every=every, patience=patience)
    out = []
    i = 0
    for text in obs_texts:
        out.append(det.update(act(i, "search", "something"), None))
        out.append(det.update(obs(i + 1, text), None))
        i += 2
    return det, [s for s in out if s is not None]


def test_goal_terms_drop_filler_and_cap():
    assert goal_terms("Find the birthplace of Ada Lovelace") == frozenset({"birthplace", "ada", "lovelace"})
    many = " ".join(f"w{i}" for i in range(DRIFT_MAX_GOAL_TERMS + 10))
    assert len(goal_terms(many)) == DRIFT_MAX_GOAL_TERMS
    assert goal_terms("") == frozenset()


def test_drift_patience_both_sides():
    # coverage stuck at 1/3 ("ada") from the first checkpoint on.
    texts = ["ada was here"] + ["nothing relevant"] * 7
    det, sigs = _drift_run("birthplace of ada lovelace", texts, every=2, patience=DRIFT_PATIENCE)
    stalled = [s.checkpoint.stalled for s in sigs]
    assert stalled[:3] == [0, 1, 2]
    assert [s.flag for s in sigs][:3] == [False, DRIFT_PATIENCE <= 1, True]
    cp = sigs[2].checkpoint
    assert cp.missing == ["birthplace", "lovelace"] and cp.obtained == ["ada"]
    assert cp.goal.startswith("birthplace") and cp.strategy


def test_drift_gain_resets():
    texts = ["ada"] + ["x"] * 3 + ["lovelace"] + ["x"]
    _, sigs = _drift_run("ada lovelace birthplace", texts, every=2, patience=2)
    assert sigs[-3].checkpoint.stalled == 3
    assert sigs[-2].checkpoint.stalled == 0  # the gain at "lovelace" reset the stall


def test_drift_min_gain_both_sides():
    assert 0 < DRIFT_MIN_GAIN < 1
    terms = " ".join(f"t{i}" for i in range(20))  # one term = 0.05 of coverage
    det = DriftDetector(goal=terms, every=1, patience=1, min_gain=0.05)
    det.update(obs(0, "t0"))  # first checkpoint
    s1 = det.update(obs(1, "t1"))  # +0.05 == min gain -> missing shrank anyway -> not stalled
    assert s1.checkpoint.stalled == 0
    det2 = DriftDetector(goal=terms, every=1, patience=1, min_gain=0.06)
    det2.update(obs(0, "t0"))
    s2 = det2.update(obs(1, "t0"))  # no gain, nothing shrank -> stalled
    assert s2.checkpoint.stalled == 1 and s2.flag


def test_checkpoint_every_k_steps():
    steps = [thought(i, "thinking") for i in range(DRIFT_CHECK_EVERY * 3)]
    sigs = drift_scan(steps, goal="ada lovelace")
    assert [s.step for s in sigs] == [DRIFT_CHECK_EVERY - 1, 2 * DRIFT_CHECK_EVERY - 1, 3 * DRIFT_CHECK_EVERY - 1]
    assert sigs[0].checkpoint.strategy == "thinking"
    just_before = drift_scan(steps[: DRIFT_CHECK_EVERY - 1], goal="ada lovelace")
    assert just_before == []


def test_no_goal_no_drift_and_nothing_missing_no_drift():
    assert drift_scan([obs(i, "x") for i in range(40)], goal="") == []
    sigs = drift_scan([obs(i, "ada lovelace") for i in range(40)], goal="ada lovelace", every=2, patience=1)
    assert sigs and not any(s.flag for s in sigs)


def test_intervention_steps_not_counted():
    det = DriftDetector(goal="ada", every=1)
    assert det.update(Step(index=0, kind="intervention", text="hint")) is None
