"""Benchmark: aligning reruns for the compare page (issue 6).

Target: the compare page for 20 runs x 50 steps must render in 300 ms server
time *including* the alignment, so the alignment itself should stay well under
150 ms; 50 runs x 200 steps must stay usable (well under a second).

Synthetic reruns are made from real trajectories (../shared/eval, the sibling
of the repository) with the mutations reruns show: a detour inserted, a step
dropped, a query rephrased, a different choice from some step on, an early
stop. A worst case of 50 unrelated runs (no shared action) is timed too.

    .venv/bin/python bench/alignment_speed.py [--repeat 5] [--seed 1] [--smoke]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import _paths

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tracing.core.alignment import align_runs  # noqa: E402
from tracing.core.steps import Step, read_jsonl  # noqa: E402

EVAL_DIR = _paths.eval_dir()
SOURCES = ("alfworld_sala", "reflexion_hotpotqa", "react_webshop")

# Page budget for 20 x 50 is 300 ms in all; alignment gets at most half.
TARGET_MS = {"20x50": 150.0, "50x200": 1000.0}


def load_pool() -> list[list[Step]]:
    pool = []
    for source in SOURCES:
        path = EVAL_DIR / source / "runs.jsonl"
        if path.exists():
            pool.extend(t.steps for t in read_jsonl(path) if len(t.steps) >= 6)
    if not pool:
        sys.exit(f"no trajectories under {EVAL_DIR}")
    return pool


def chunks(steps: list[Step]) -> list[list[Step]]:
    """Split into thought/action/observation turns (the mutation granule)."""
    out: list[list[Step]] = []
    for step in steps:
        if not out or step.kind in ("thought", "action") and any(s.kind in ("action", "final") for s in out[-1]):
            out.append([])
        out[-1].append(step)
    return out


def base_run(pool: list[list[Step]], length: int, rng: random.Random) -> list[list[Step]]:
    """Real turns, concatenated from several trajectories up to `length` steps."""
    turns: list[list[Step]] = []
    total = 0
    while total < length:
        for turn in chunks(rng.choice(pool)):
            if turn[-1].kind == "final" or total >= length:
                continue
            turns.append(turn)
            total += len(turn)
    return turns


def mutate(turns: list[list[Step]], pool: list[list[Step]], rng: random.Random) -> list[list[Step]]:
    out = [list(t) for t in turns]
    for _ in range(rng.randint(1, 4)):
        what = rng.random()
        pos = rng.randrange(len(out))
        if what < 0.35:  # a detour of 1-4 foreign turns
            detour = chunks(rng.choice(pool))
            out[pos:pos] = detour[: rng.randint(1, 4)]
        elif what < 0.55 and len(out) > 2:  # a dropped turn
            del out[pos]
        elif what < 0.8:  # a rephrased query
            out[pos] = [replace(s, args=f"{s.args} again") if s.kind == "action" else s for s in out[pos]]
        else:  # a different choice from here on
            tail = chunks(rng.choice(pool))
            out[pos:] = tail[: max(1, len(out) - pos)]
    return out


def flatten(turns: list[list[Step]], length: int) -> list[Step]:
    steps = [s for turn in turns for s in turn][:length]
    return [replace(s, index=i) for i, s in enumerate(steps)]


def make_runs(pool: list[list[Step]], n_runs: int, length: int, rng: random.Random) -> list[list[Step]]:
    base = base_run(pool, length, rng)
    return [flatten(mutate(base, pool, rng), length) for _ in range(n_runs)]


def unrelated_runs(pool: list[list[Step]], n_runs: int, length: int, rng: random.Random) -> list[list[Step]]:
    runs = []
    for k in range(n_runs):
        turns = base_run(pool, length, rng)
        # Tag every argument with the run so that no two runs share an action.
        tagged = [
            [replace(s, args=f"{s.args} r{k}a r{k}b r{k}c") if s.kind == "action" else s for s in t] for t in turns
        ]
        runs.append(flatten(tagged, length))
    return runs


def time_ms(runs: list[list[Step]], repeat: int) -> tuple[float, float, int]:
    times = []
    rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        grid = align_runs(runs)
        times.append((time.perf_counter() - start) * 1000)
        rows = len(grid.rows)
    return statistics.median(times), max(times), rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=_paths.sized(5, 1))
    parser.add_argument("--seed", type=int, default=1)
    opts = parser.parse_args()
    rng = random.Random(opts.seed)
    pool = load_pool()
    cases = [
        ("20x50", make_runs(pool, 20, 50, rng)),
        ("50x200", make_runs(pool, 50, 200, rng)),
        ("50x200 unrelated", unrelated_runs(pool, 50, 200, rng)),
    ]
    failed = False
    print(f"{'case':<18} {'median ms':>10} {'max ms':>8} {'rows':>5}  target")
    for name, runs in cases:
        median, worst, rows = time_ms(runs, opts.repeat)
        target = TARGET_MS.get(name)
        verdict = ""
        if target is not None:
            ok = median <= target
            failed |= not ok
            verdict = f"<= {target:.0f} ms {'ok' if ok else 'MISSED'}"
        print(f"{name:<18} {median:>10.1f} {worst:>8.1f} {rows:>5}  {verdict}")
    return _paths.exit_code(failed)


if __name__ == "__main__":
    raise SystemExit(main())
