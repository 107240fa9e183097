"""Re-analysis of stored runs (`manage.py analyse`, issue 11): runs per second;
and what error attribution adds to a run's analysis (issue 17: <= 5 ms per run).

    .venv/bin/python bench/analyse.py [--copies 3] [--pairs 3] [--smoke: one copy of a few runs per source]

Seeds a scratch database `agentlab_bench_analyse` by importing every source of
shared/eval `--copies` times under different source labels (3 copies: 10,074
runs, 153,153 steps), then times the import and `manage.py analyse --all`
(anchor breaks, findings and signals recomputed, review items synced).

Then attribution, paired in the same process over the same runs (one copy of
every source): every batch of runs is analysed twice, once as the run's end
does it and once with attribution switched off, in alternating order, `--pairs`
times; the difference per run is what attribution adds, its writes included.
Next to it, `attribute()` alone on each failed run given its analysis (what the
difference is made of, without the noise of two database round trips).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import statistics
import time
from unittest import mock

import _django

DB = _django.bench_db("agentlab_bench_analyse")
PAIR_BATCH = 50  # runs per timed runs_analyse call: the analyse command's batches, smaller


def _paired(run_ids: list[int], pairs: int) -> tuple[list[float], list[float]]:
    """Seconds of runs_analyse per batch, with attribution and without, in pairs."""
    from runs.launch import run_analysis as analysis

    with_it, without = [], []
    batches = [run_ids[i:i + PAIR_BATCH] for i in range(0, len(run_ids), PAIR_BATCH)]
    for round_ in range(pairs):
        for n, batch in enumerate(batches):
            # Alternate which goes first, so a cache warmed by the first is no one's advantage.
            for on in ((True, False) if (n + round_) % 2 == 0 else (False, True)):
                off = mock.patch.object(analysis, "attribution_column", return_value={})
                with contextlib.nullcontext() if on else off:
                    started = time.perf_counter()
                    analysis.runs_analyse(batch)  # as at a run's end (runs.lifecycle)
                    (with_it if on else without).append(time.perf_counter() - started)
    return with_it, without


def _attribute_alone(failed_ids: list[int]) -> list[float]:
    """Milliseconds of attribution_column per failed run, given the run's analysis."""
    from runs.core.models import Run
    from runs.launch.run_analysis import _records, attribution_column
    from tracing.core.analysis import analyse

    times = []
    for start in range(0, len(failed_ids), PAIR_BATCH):
        runs = list(Run.objects.filter(pk__in=failed_ids[start:start + PAIR_BATCH]).select_related("policy"))
        trajectories = _records(runs)
        for run in runs:
            records, _ = trajectories[run.pk]
            report = analyse(records, task=run.goal, context=run.context or None,
                             policy=run.policy.as_policy() if run.policy_id else None)
            started = time.perf_counter()
            attribution_column(records, goal=run.goal, status=run.status, success=run.success, report=report,
                               context=run.context)
            times.append((time.perf_counter() - started) * 1000)
    return times


def attribution_overhead(pairs: int) -> None:
    from runs.core.models import Run

    # One copy of every source: the pairs analyse each run 2 × pairs times.
    runs = Run.objects.exclude(status__in=Run.LIVE_STATUSES).filter(source__endswith="-0")
    run_ids = list(runs.order_by("pk").values_list("pk", flat=True))
    failed = list(runs.filter(status=Run.Status.FINISHED, success=False).order_by("pk").values_list("pk", flat=True))
    with_it, without = _paired(run_ids, pairs)
    n = len(run_ids) * pairs
    on_ms, off_ms = sum(with_it) * 1000 / n, sum(without) * 1000 / n
    diffs = [(a - b) * 1000 for a, b in zip(with_it, without, strict=True)]
    print(f"analysis of {len(run_ids)} runs ({len(failed)} failed), {pairs} pairs of batches of {PAIR_BATCH}: "
          f"{on_ms:.2f} ms/run with attribution, {off_ms:.2f} ms/run without: "
          f"+{on_ms - off_ms:.2f} ms per run, +{(on_ms - off_ms) * len(run_ids) / max(len(failed), 1):.2f} ms "
          f"per failed run (target <= 5 ms per run); batch differences median "
          f"{statistics.median(diffs) / PAIR_BATCH:+.2f} ms/run")
    alone = _attribute_alone(failed)
    print(f"attribute() alone, given the analysis: {len(alone)} failed runs, mean {statistics.fmean(alone):.2f} ms, "
          f"median {statistics.median(alone):.2f} ms, P95 {_django.percentile(alone, 95):.2f} ms, "
          f"max {max(alone):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=_django.sized(3, 1))
    parser.add_argument("--pairs", type=int, default=_django.sized(3, 1), help="rounds of paired batches for the attribution figure")
    parser.add_argument("--attribution-only", action="store_true", help="skip timing `manage.py analyse --all`")
    args = parser.parse_args()
    _django.ensure_database(DB)
    from django.core.management import call_command

    from runs.core.models import Run
    from runs.imports.services import import_lines

    sources = sorted(_django.EVAL_DIR.glob("*/runs.jsonl"))
    assert sources, f"no runs.jsonl under {_django.EVAL_DIR}"
    started = time.perf_counter()
    for copy in range(args.copies):
        for path in sources:
            with path.open("rb") as fh:
                result = import_lines(fh, project_id=_django.bench_project().pk, source=f"{path.parent.name}-{copy}")
            assert not result.errors, result.errors[:3]
    imported = time.perf_counter() - started
    runs = Run.objects.count()
    print(f"imported {runs} runs in {imported:.1f} s: {runs / imported:.1f} runs/s (signals and anchoring included)")
    if not args.attribution_only:
        out = io.StringIO()
        started = time.perf_counter()
        call_command("analyse", "--all", "--no-progress", stdout=out)
        elapsed = time.perf_counter() - started
        print(f"manage.py analyse --all: {runs} runs in {elapsed:.1f} s: {runs / elapsed:.1f} runs/s; "
              f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    attribution_overhead(args.pairs)


if __name__ == "__main__":
    main()
