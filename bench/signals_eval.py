"""Signals per source, beside the naive baseline: does the anchor break fire on
failed runs far more than on succeeded ones?

    python3 bench/signals_eval.py [--extra DIR ...] [--smoke]

For every source of shared/eval (and each ``DIR/<source>/runs.jsonl`` given
with ``--extra``, e.g. a converted source nobody tuned on), on uncorrupted
runs with an outcome:

- the shown break (strong evidence, tracing.core.anchoring.strength): share of
  succeeded and of failed runs with one, and the lift (failed rate ÷
  succeeded rate; goal: succeeded ≤ 5%, lift ≥ 3);
- the first finding (weak evidence, "worth a look"), the same figures;
- the naive baseline in the same run: the first agent step right after a
  failed result (bench/anchoring_eval.naive_break);
- per pattern, how often it is the shown break on succeeded and failed runs:
  the share on failed runs is a floor on its precision where most failures
  have a lapse (a proxy; the corruption benchmark measures localisation).

Pure Python, no database. ``--smoke``: the first 20 runs of each source.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import eval_dir, setup_code_path  # noqa: E402

setup_code_path()

from anchoring_eval import lift, naive_break  # noqa: E402

from tracing.core.anchoring import anchor_report  # noqa: E402
from tracing.core.steps import read_jsonl  # noqa: E402


def sources(extra: list[Path]) -> list[tuple[str, Path]]:
    out = [(p.parent.name, p) for p in sorted(eval_dir().glob("*/runs.jsonl"))]
    for folder in extra:
        out += [(f"{p.parent.name} (extra)", p) for p in sorted(folder.glob("*/runs.jsonl"))]
    return out


def measure(path: Path, limit: int | None) -> tuple[Counter, Counter]:
    figures: Counter = Counter()
    patterns: Counter = Counter()
    for n, traj in enumerate(read_jsonl(path)):
        if limit is not None and n >= limit:
            break
        if traj.success not in (True, False):
            continue
        side = "ok" if traj.success else "bad"
        rep = anchor_report(traj.steps, task=traj.goal, context=traj.context)
        figures[side] += 1
        figures[f"{side}_shown"] += rep.first_break is not None
        figures[f"{side}_finding"] += rep.first_finding is not None
        figures[f"{side}_naive"] += naive_break(traj.steps) is not None
        if rep.first_break is not None:
            patterns[(rep.evidence.get("pattern"), side)] += 1
    return figures, patterns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extra", type=Path, action="append", default=[], help="a folder of <source>/runs.jsonl")
    parser.add_argument("--smoke", action="store_true", help="the first 20 runs of each source")
    args = parser.parse_args(argv)
    limit = 20 if args.smoke else None

    def rate(hits: int, n: int) -> str:
        return f"{hits:4}/{n:<4} {100 * hits / n:5.1f}%" if n else "      -       "

    header = f"{'source':30} {'shown: succeeded':>17} {'failed':>15} {'lift':>5} | {'finding: succ.':>15} " \
             f"{'failed':>15} {'lift':>5} | {'naive: succ.':>15} {'failed':>15} {'lift':>5}"
    print(header)
    per_pattern: dict[str, Counter] = defaultdict(Counter)
    total: Counter = Counter()
    for name, path in sources(args.extra):
        f, patterns = measure(path, limit)
        total.update(f)
        for (pattern, side), n in patterns.items():
            per_pattern[pattern][f"{name}|{side}"] += n
        cols = []
        for key in ("shown", "finding", "naive"):
            cols.append(f"{rate(f[f'ok_{key}'], f['ok']):>15} {rate(f[f'bad_{key}'], f['bad']):>15} "
                        f"{lift(f[f'bad_{key}'], f['bad'], f[f'ok_{key}'], f['ok']):>5}")
        print(f"{name:30} " + " | ".join(cols))
    cols = [f"{rate(total[f'ok_{k}'], total['ok']):>15} {rate(total[f'bad_{k}'], total['bad']):>15} "
            f"{lift(total[f'bad_{k}'], total['bad'], total[f'ok_{k}'], total['ok']):>5}" for k in ("shown", "finding", "naive")]
    print(f"{'all':30} " + " | ".join(cols))
    print("\n-- the shown break's pattern: runs (succeeded / failed) per source")
    for pattern, counts in sorted(per_pattern.items(), key=lambda kv: -sum(kv[1].values())):
        by_source = defaultdict(lambda: [0, 0])
        for key, n in counts.items():
            source, side = key.rsplit("|", 1)
            by_source[source][side == "bad"] += n
        ok = sum(v[0] for v in by_source.values())
        bad = sum(v[1] for v in by_source.values())
        cells = ", ".join(f"{s} {v[0]}/{v[1]}" for s, v in sorted(by_source.items()))
        print(f"{pattern:22} {ok:4} / {bad:4}   {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
