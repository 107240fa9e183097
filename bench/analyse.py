"""Re-analysis of stored runs (`manage.py analyse`, issue 11): runs per second.

    .venv/bin/python bench/analyse.py [--copies 3]

Seeds a scratch database `agentlab_bench_analyse` by importing every source of
shared/eval `--copies` times under different source labels (3 copies: 10,074
runs, 153,153 steps), then times the import and `manage.py analyse --all`
(anchor breaks, findings and signals recomputed, review items synced).
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import time

import _django

DB = os.environ.get("BENCH_DB", "agentlab_bench_analyse")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=3)
    args = parser.parse_args()
    _django.ensure_database(DB)
    from django.core.management import call_command

    from runs.imports.services import import_lines
    from runs.launch.models import Run

    sources = sorted(_django.EVAL_DIR.glob("*/runs.jsonl"))
    started = time.perf_counter()
    for copy in range(args.copies):
        for path in sources:
            with path.open("rb") as fh:
                result = import_lines(fh, project_id=_django.bench_project().pk, source=f"{path.parent.name}-{copy}")
            assert not result.errors, result.errors[:3]
    imported = time.perf_counter() - started
    runs = Run.objects.count()
    print(f"imported {runs} runs in {imported:.1f} s: {runs / imported:.1f} runs/s (signals and anchoring included)")
    out = io.StringIO()
    started = time.perf_counter()
    call_command("analyse", "--all", "--no-progress", stdout=out)
    elapsed = time.perf_counter() - started
    print(f"manage.py analyse --all: {runs} runs in {elapsed:.1f} s: {runs / elapsed:.1f} runs/s; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
