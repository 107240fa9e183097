"""Calibration bench (issue 26, item 3): reviewers' labels drawn from the
corruption benchmark's truth demote patterns per project; the shown-break
precision before and after.

Each source of ../shared/eval is one project. Its runs are the corruption
benchmark's cases (bench/anchoring_eval.py: one corrupted copy per run and
kind, the lapse at a known step) and its uncorrupted runs that succeeded (no
lapse). Failed uncorrupted runs are left out: where their lapse is, nobody
knows. A simulated reviewer labels every shown break as runs.breaks.rule
.verdict_of says: ``right`` at the injected step, ``none`` on a succeeded
uncorrupted run, else ``earlier`` / ``later``.

The runs are split in two halves by run (a run's corrupted copies and its
clean self stay together): the reviewers label the *calibration* half, the
project's rule (runs.breaks.rule, floor and minimum labels as in the product)
demotes patterns from those labels, and the precision is measured on the
*held-out* half, before and after, with the detector re-run with the demoted
patterns (the next strong break is shown, or none). Precision = shown breaks
at the lapse ÷ shown breaks. Also: exact localisation on the corrupted cases
(the price of a demotion) and shown breaks on succeeded runs.

Measured at 9289b2b (seed 7, the default rule: 50% over >= 20 labels; 13,813
runs, 3 min 17 s of CPU): no pattern falls under the floor on any source, so
held-out precision is unchanged, 91.2% pooled (83.9%-98.6% per source). The
lowest tallies with enough labels: requery 69.4% (react_webshop, 242 labels),
requery 70.5% (alfworld_sala, 44), unconfirmed_success 74.6% (tau2, 122);
wrong_relation is 0/10 on reflexion_hotpotqa, under the minimum. The labels
are mostly on corrupted copies (one per run and kind), so this precision is
the benchmark's, not a project's natural mix: a team whose runs mostly
succeed sees a lower one, and ``--floor``/``--min-labels`` show what a
stricter rule would take away (localisation and succeeded-run columns).

Run (pure Python, no database):
    .venv/bin/python bench/calibration.py            # every run of every source: a few minutes
    .venv/bin/python bench/calibration.py --smoke    # 12 runs per source: seconds
    .venv/bin/python bench/calibration.py --floor 0.6 --min-labels 10 --only intercode
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anchoring_eval as E  # noqa: E402  (puts the measured checkout on sys.path)
import corruptions as C  # noqa: E402

from runs.breaks import rule  # noqa: E402
from tracing.core.anchoring import anchor_report  # noqa: E402

SMOKE_RUNS = 12


@dataclass
class Item:
    """One run of a project: its steps, its lapse (None: none), its half, its shown break."""

    key: str  # the run it comes from (its half)
    steps: list
    traj: object
    lapse: int | None
    corrupted: bool
    shown: int | None = None
    pattern: str | None = None


def _half(source: str, run_id: str) -> str:
    digest = hashlib.sha1(f"{source}|{run_id}".encode()).digest()
    return "calibration" if digest[0] % 2 == 0 else "held-out"


def _show(item: Item, demoted: frozenset[str] = frozenset()) -> tuple[int | None, str | None]:
    rep = anchor_report(item.steps, task=item.traj.goal, context=item.traj.context, demoted=demoted)
    return rep.first_break, (rep.evidence or {}).get("pattern")


def items_of(runs: dict[str, list[C.Run]], seed: int) -> dict[str, list[Item]]:
    """Per source, the corrupted cases and the succeeded uncorrupted runs, each with its shown break."""
    clean = {s: [E.report(r.steps, r.traj) for r in rs] for s, rs in runs.items()}
    cases, _ = E.make_cases(runs, {s: [rep.first_break for rep in reps] for s, reps in clean.items()}, seed)
    out: dict[str, list[Item]] = defaultdict(list)
    for source, rs in runs.items():
        for run, rep in zip(rs, clean[source], strict=True):
            if run.traj.success:
                out[source].append(Item(run.traj.run_id, run.steps, run.traj, None, False, rep.first_break,
                                        (rep.evidence or {}).get("pattern")))
    for case in cases:
        item = Item(case.run.traj.run_id, case.steps, case.run.traj, case.expected, True)
        item.shown, item.pattern = _show(item)
        out[case.source].append(item)
    return out


@dataclass
class Figures:
    shown: int = 0
    right: int = 0
    cases: int = 0
    exact: int = 0
    succeeded: int = 0
    succeeded_shown: int = 0

    def add(self, item: Item, shown: int | None) -> None:
        if shown is not None:
            self.shown += 1
            self.right += rule.verdict_of(shown, item.lapse) == rule.RIGHT
        if item.corrupted:
            self.cases += 1
            self.exact += shown is not None and shown == item.lapse
        else:
            self.succeeded += 1
            self.succeeded_shown += shown is not None

    def precision(self) -> str:
        return E.pct(self.right, self.shown)


def calibrate(items: list[Item], source: str, *, floor: float, min_labels: int) -> tuple[frozenset[str], dict]:
    """The patterns the calibration half's labels demote, and their tallies."""
    verdicts: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if _half(source, item.key) == "calibration" and item.shown is not None and item.pattern:
            verdicts[item.pattern].append(rule.verdict_of(item.shown, item.lapse))
    tallies = {p: rule.Tally.of(v) for p, v in verdicts.items()}
    return rule.demoted_set(tallies, floor=floor, min_labels=min_labels), tallies


def measure(items: list[Item], source: str, demoted: frozenset[str], half: str) -> tuple[Figures, Figures]:
    """(before, after) on one half; only runs whose shown pattern is demoted are re-analysed
    (demotion changes nothing else: a run's first strong break of another pattern stays first)."""
    before, after = Figures(), Figures()
    for item in items:
        if half != "all" and _half(source, item.key) != half:
            continue
        before.add(item, item.shown)
        shown = _show(item, demoted)[0] if item.pattern in demoted else item.shown
        after.add(item, shown)
    return before, after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help=f"the first {SMOKE_RUNS} runs per source")
    parser.add_argument("--only", action="append", default=None, metavar="SOURCE")
    parser.add_argument("--floor", type=float, default=rule.DEFAULT_FLOOR)
    parser.add_argument("--min-labels", type=int, default=rule.DEFAULT_MIN_LABELS)
    args = parser.parse_args(argv)
    if not E.EVAL_DIR.is_dir():
        print(f"no eval data at {E.EVAL_DIR} (set AGENTLAB_EVAL)")
        return 2
    start = time.perf_counter()
    data = E.load(args.only)
    runs = {s: [C.Run(t) for t in (ts[:SMOKE_RUNS] if args.smoke else ts)] for s, ts in data.items()}
    by_source = items_of(runs, args.seed)
    print(f"detectors from {E.describe(E.CODE_ROOT)}; data from {E.EVAL_DIR}; seed {args.seed}; "
          f"rule: demote under {args.floor:.0%} over >= {args.min_labels} labels"
          f"{f'; smoke: {SMOKE_RUNS} runs per source' if args.smoke else ''}")
    print("\n== shown-break precision on the held-out half, before -> after demotion (labels from the other half)")
    print(f"{'source':20} {'labels':>6} {'demoted':28} {'precision before':>18} {'after':>18} "
          f"{'exact before':>18} {'after':>18} {'succ. shown before':>19} {'after':>18}")
    pooled = [Figures(), Figures()]
    demoted_by: dict[str, tuple[frozenset[str], dict]] = {}
    for source in sorted(by_source):
        items = by_source[source]
        demoted, tallies = calibrate(items, source, floor=args.floor, min_labels=args.min_labels)
        demoted_by[source] = (demoted, tallies)
        before, after = measure(items, source, demoted, "held-out")
        for acc, fig in zip(pooled, (before, after), strict=True):
            for name in vars(fig):
                setattr(acc, name, getattr(acc, name) + getattr(fig, name))
        labels = sum(t.labelled for t in tallies.values())
        print(f"{source:20} {labels:>6} {', '.join(sorted(demoted)) or '-':28} {before.precision():>18} "
              f"{after.precision():>18} {E.pct(before.exact, before.cases):>18} {E.pct(after.exact, after.cases):>18} "
              f"{E.pct(before.succeeded_shown, before.succeeded):>19} "
              f"{E.pct(after.succeeded_shown, after.succeeded):>18}")
    before, after = pooled
    print(f"{'all (pooled)':20} {'':>6} {'':28} {before.precision():>18} {after.precision():>18} "
          f"{E.pct(before.exact, before.cases):>18} {E.pct(after.exact, after.cases):>18} "
          f"{E.pct(before.succeeded_shown, before.succeeded):>19} {E.pct(after.succeeded_shown, after.succeeded):>18}")
    print("\n== per source, the calibration half's verdicts per pattern (right / earlier / later / none; precision)")
    for source, (demoted, tallies) in sorted(demoted_by.items()):
        parts = [f"{p}{' [demoted]' if p in demoted else ''} {t.right}/{t.earlier}/{t.later}/{t.none}"
                 f" {E.pct(t.right, t.labelled).strip()}" for p, t in sorted(tallies.items(), key=lambda kv: -kv[1].labelled)]
        print(f"{source:20} " + ("; ".join(parts) or "no shown break"))
    kinds = Counter(item.pattern for items in by_source.values() for item in items if item.shown is not None)
    print(f"\n{sum(len(v) for v in by_source.values())} runs ({sum(kinds.values())} shown breaks) in "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
