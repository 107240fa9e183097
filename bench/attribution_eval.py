"""Error attribution measured against hand labels (issue 17, item 2).

The sample: 60 failed runs of shared/eval, drawn once by ``sample()`` (a
generator seeded per source, so adding a source does not reshuffle the
others) and labelled by hand before the guesser was written
(tests/tracing/attribution_labels.jsonl).

    .venv/bin/python bench/attribution_eval.py --sample   # the ids to label
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import eval_dir, setup_code_path  # noqa: E402

CODE_ROOT = setup_code_path()

from tracing.steps import Trajectory, read_jsonl  # noqa: E402

EVAL_DIR = eval_dir()
SEED = 17
SAMPLE_SIZE = 60


def failed_runs(source: str) -> list[Trajectory]:
    return [t for t in read_jsonl(EVAL_DIR / source / "runs.jsonl") if t.success is False]


def sample(seed: int = SEED, size: int = SAMPLE_SIZE) -> list[tuple[str, str]]:
    """(source, run_id) of ``size`` failed runs, spread evenly over the sources
    that have failures; the remainder goes to the sources with most failures."""
    pools = {p.parent.name: failed_runs(p.parent.name) for p in sorted(EVAL_DIR.glob("*/runs.jsonl"))}
    pools = {s: runs for s, runs in pools.items() if runs}
    share, extra = divmod(size, len(pools))
    larger = sorted(pools, key=lambda s: (-len(pools[s]), s))[:extra]
    out: list[tuple[str, str]] = []
    for source in sorted(pools):
        rng = random.Random(f"{seed}:{source}")
        picked = rng.sample(pools[source], share + (source in larger))
        out.extend((source, t.run_id) for t in picked)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", action="store_true", help="print the runs to label and exit")
    args = parser.parse_args()
    if args.sample:
        for source, run_id in sample():
            print(source, run_id)


if __name__ == "__main__":
    main()
