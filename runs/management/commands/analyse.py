from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from datetime import date
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError

from runs.core.models import Run
from runs.date_filters import day_start
from runs.lifecycle import runs_judge

# A batch is analysed and written in one transaction. Runs per batch and steps
# per batch both bound it: a batch of long runs holds at most BATCH_STEPS steps
# in memory, whatever the history's size.
BATCH_RUNS = 200
BATCH_STEPS = 20_000
# The progress line is redrawn at most this often.
PROGRESS_EVERY_S = 0.25


def _batches(runs, batch_runs: int, batch_steps: int) -> Iterator[list[int]]:
    """Run ids in batches, read with a server-side cursor (ids and step counts only)."""
    batch: list[int] = []
    steps = 0
    for pk, count in runs.order_by("pk").values_list("pk", "step_count").iterator(chunk_size=2000):
        if batch and (len(batch) >= batch_runs or steps + count > batch_steps):
            yield batch
            batch, steps = [], 0
        batch.append(pk)
        steps += count
    if batch:
        yield batch


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """"runs done / total, runs per second, ETA" on one redrawn line of a terminal."""

    WIDTH = 24

    def __init__(self, total: int, out: TextIO, enabled: bool) -> None:
        self.total = total
        self.out = out
        self.enabled = enabled and total > 0
        self.started = time.perf_counter()
        self.shown_at = 0.0

    def rate(self, done: int) -> float:
        elapsed = time.perf_counter() - self.started
        return done / elapsed if elapsed > 0 else 0.0

    def line(self, done: int) -> str:
        rate = self.rate(done)
        filled = int(self.WIDTH * done / self.total) if self.total else self.WIDTH
        eta = _duration((self.total - done) / rate) if rate > 0 else "?"
        return (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total} runs · "
                f"{rate:.1f} runs/s · ETA {eta}")

    def update(self, done: int, *, force: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (not force and now - self.shown_at < PROGRESS_EVERY_S):
            return
        self.shown_at = now
        self.out.write("\r" + self.line(done) + "\033[K")
        self.out.flush()

    def close(self, done: int) -> None:
        if self.enabled:
            self.update(done, force=True)
            self.out.write("\n")
            self.out.flush()


class Command(BaseCommand):
    help = ("Recompute stored runs' anchor breaks, findings and watchdog signals with the current detectors "
            "(run it when a detector changes). Shows progress on stderr when it is a terminal.")

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, action="append", help="a run id (repeatable)")
        parser.add_argument("--source", help="only runs from this source (agentlab, api, otlp, an import's label...)")
        parser.add_argument("--since", type=date.fromisoformat, help="only runs created on or after this day "
                            "(YYYY-MM-DD, UTC)")
        parser.add_argument("--all", action="store_true", help="every ended run")
        parser.add_argument("--anchoring-only", action="store_true", help="keep the stored signals")
        parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
        parser.add_argument("--batch-runs", type=int, default=BATCH_RUNS, help=f"runs per batch ({BATCH_RUNS})")

    def handle(self, *args, **opts):
        runs = Run.objects.exclude(status__in=Run.LIVE_STATUSES)
        if not (opts["run"] or opts["source"] or opts["since"] or opts["all"]):
            raise CommandError("say which runs: --run ID, --source NAME, --since DAY or --all")
        if opts["run"]:
            runs = runs.filter(pk__in=opts["run"])
        if opts["source"]:
            runs = runs.filter(source=opts["source"])
        if opts["since"]:
            runs = runs.filter(created_at__gte=day_start(opts["since"]))
        if opts["batch_runs"] < 1:
            raise CommandError("--batch-runs must be at least 1")
        total = runs.count()
        stderr = getattr(self.stderr, "_out", sys.stderr)
        progress = Progress(total, stderr, enabled=not opts["no_progress"] and stderr.isatty())
        done = 0
        for batch in _batches(runs, opts["batch_runs"], BATCH_STEPS):
            done += runs_judge(batch, recompute_signals=not opts["anchoring_only"])
            progress.update(done)
        progress.close(done)
        elapsed = time.perf_counter() - progress.started
        self.stdout.write(f"analysed {done} runs in {elapsed:.1f} s ({progress.rate(done):.1f} runs/s)")
