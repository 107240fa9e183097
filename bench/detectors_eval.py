"""Detectors over the real trajectories in ../shared/eval: what they flag, where,
and what the default policy would stop.

    .venv/bin/python bench/detectors_eval.py [--policy NAME_OR_JSON] [--eval DIR]

Per source: runs flagged by each detector (a trigger the watchdog would act on,
computed over the whole run with interventions off), the step index of the
first flag (median and quartiles), and for the policy replayed as if live the
stop rate on runs that succeeded (a false kill by the data's own outcome)
against the stop rate on runs that failed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracing.detect import load_policy  # noqa: E402
from tracing.steps import read_jsonl  # noqa: E402
from tracing.watchdog import Watchdog  # noqa: E402

DETECTORS = ("repetition", "observation", "stagnation", "drift")
DEFAULT_EVAL = REPO.parent / "shared" / "eval"


def quartiles(values: list[int]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]}"
    q = statistics.quantiles(values, n=4, method="inclusive")
    return f"{statistics.median(values):g} [{q[0]:g}-{q[2]:g}]"


def pct(num: int, den: int) -> str:
    return f"{num}/{den} ({100.0 * num / den:.1f}%)" if den else "0/0"


def evaluate(path: Path, policy) -> dict:
    off = replace(policy, enabled=False)
    flagged: dict[str, list[int]] = {d: [] for d in DETECTORS}
    flagged_ok: Counter[str] = Counter()
    tiers: Counter[str] = Counter()
    by_det: Counter[str] = Counter()
    stops = {True: 0, False: 0}
    totals = {True: 0, False: 0}
    stop_steps: list[int] = []
    stop_frac: list[float] = []
    runs = 0
    for traj in read_jsonl(path):
        runs += 1
        wd = Watchdog(off, goal=traj.task)
        first: dict[str, int] = {}
        for step in traj.steps:
            wd.observe(step)
            for det in wd.signals.get(step.index, {}).get("triggers", ()):
                first.setdefault(det, step.index)
        for det, idx in first.items():
            flagged[det].append(idx)
            flagged_ok[det] += bool(traj.success)
        live = Watchdog(policy, goal=traj.task)
        ok = bool(traj.success)
        totals[ok] += 1
        for step in traj.steps:
            iv = live.observe(step)
            if iv is None:
                continue
            tiers[iv.tier] += 1
            by_det[f"{iv.detector}/{iv.tier}"] += 1
            if iv.tier == "stop":
                stops[ok] += 1
                stop_steps.append(step.index)
                stop_frac.append(step.index / max(1, traj.steps[-1].index))
                break
    return {
        "runs": runs,
        "flagged": flagged,
        "flagged_ok": flagged_ok,
        "tiers": tiers,
        "by_det": by_det,
        "stops": stops,
        "totals": totals,
        "stop_steps": stop_steps,
        "stop_frac": stop_frac,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default=None)
    parser.add_argument("--eval", default=str(DEFAULT_EVAL))
    args = parser.parse_args()
    policy = load_policy(args.policy)
    root = Path(args.eval)
    files = sorted(root.glob("*/runs.jsonl"))
    if not files:
        print(f"no trajectories under {root}", file=sys.stderr)
        return 1
    print(f"policy {policy.name} v{policy.version}")
    all_ok = all_fail = stop_ok = stop_fail = 0
    for path in files:
        r = evaluate(path, policy)
        src = path.parent.name
        print(f"\n== {src}: {r['runs']} runs, {r['totals'][True]} succeeded")
        for det in DETECTORS:
            steps = r["flagged"][det]
            n_ok = r["flagged_ok"][det]
            split = f"succeeded {n_ok}/{r['totals'][True]}, failed {len(steps) - n_ok}/{r['totals'][False]}"
            print(
                f"  {det:<12} flags {pct(len(steps), r['runs']):<18} ({split}); first flag at step {quartiles(steps)}"
            )
        print(f"  interventions by tier: {dict(r['tiers'])}")
        print(f"  by detector/tier:     {dict(sorted(r['by_det'].items()))}")
        print(
            f"  STOP on succeeded runs (false kill): {pct(r['stops'][True], r['totals'][True])}"
            f"   on failed runs: {pct(r['stops'][False], r['totals'][False])}"
        )
        if r["stop_steps"]:
            fr = statistics.median(r["stop_frac"])
            print(f"  stop at step {quartiles(r['stop_steps'])}; median position in run {fr:.2f}")
        all_ok += r["totals"][True]
        all_fail += r["totals"][False]
        stop_ok += r["stops"][True]
        stop_fail += r["stops"][False]
    print(f"\nALL: stop on succeeded {pct(stop_ok, all_ok)}, on failed {pct(stop_fail, all_fail)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
