"""Speed of all detectors together (the Watchdog), on one core.

    .venv/bin/python bench/detectors_speed.py [--eval DIR] [--smoke]

1. steps/s over every real trajectory in ../shared/eval (target >= 20,000);
2. per-step cost at run lengths 10, 100 and 1,000 (synthetic runs built by
   repeating real steps with fresh indices) — it must stay flat: O(W) per
   step, never a rescan of the run.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import _paths

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracing.core.steps import Step, Trajectory, read_jsonl  # noqa: E402
from tracing.core.watchdog import DEFAULT_POLICY, Watchdog  # noqa: E402

TARGET_STEPS_PER_S = 20_000
DEFAULT_EVAL = _paths.eval_dir()
# Interventions off: a stop would end runs early and flatter the figure.
POLICY = replace(DEFAULT_POLICY, enabled=False)


def run_all(trajs: list[Trajectory]) -> int:
    n = 0
    for t in trajs:
        wd = Watchdog(POLICY, goal=t.task)
        for step in t.steps:
            wd.observe(step)
        n += len(t.steps)
    return n


def synthetic(pool: list[Step], length: int, offset: int) -> list[Step]:
    out = []
    for i in range(length):
        s = pool[(offset + i) % len(pool)]
        out.append(Step(index=i, kind=s.kind, text=s.text, tool=s.tool, args=s.args, meta=s.meta))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", default=str(DEFAULT_EVAL))
    parser.add_argument("--repeat", type=int, default=_paths.sized(3, 1))
    args = parser.parse_args()
    files = sorted(Path(args.eval).glob("*/runs.jsonl"))
    if not files:
        print(f"no trajectories under {args.eval}", file=sys.stderr)
        return 1
    trajs = [t for f in files for t in read_jsonl(f)]
    best = float("inf")
    steps = 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        steps = run_all(trajs)
        best = min(best, time.perf_counter() - t0)
    rate = steps / best
    verdict = "OK" if rate >= TARGET_STEPS_PER_S else "BELOW TARGET"
    print(
        f"real trajectories: {len(trajs)} runs, {steps} steps, best of {args.repeat}: "
        f"{best:.3f}s -> {rate:,.0f} steps/s (target {TARGET_STEPS_PER_S:,}) {verdict}"
    )
    for f in files:
        ts = list(read_jsonl(f))
        t0 = time.perf_counter()
        n = run_all(ts)
        dt = time.perf_counter() - t0
        print(f"  {f.parent.name:<20} {n:>6} steps  {n / dt:>10,.0f} steps/s")

    pool = [s for t in trajs for s in t.steps]
    print("per-step cost by run length (synthetic runs of repeated real steps):")
    total_steps = _paths.sized(20_000, 2_000)
    for length in (10, 100, 1000):
        runs = [synthetic(pool, length, k * length) for k in range(total_steps // length)]
        best_run = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for run in runs:
                wd = Watchdog(POLICY, goal="find the answer to the question")
                for step in run:
                    wd.observe(step)
            best_run = min(best_run, time.perf_counter() - t0)
        per = best_run / (len(runs) * length) * 1e6
        print(f"  length {length:>5}: {per:6.1f} us/step  ({len(runs) * length / best_run:,.0f} steps/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
