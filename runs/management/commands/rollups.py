"""Rebuild the dashboard's per-day rollups from the runs (runs.dashboard.models).

The trigger keeps them current; this is for rollups that cannot be trusted
(a restore of runs_run alone, rows written with the trigger disabled, as the
benches' COPY does) and after a change to what a rollup counts.

    manage.py rollups               # every day
    manage.py rollups --since 2026-11-01
"""

from __future__ import annotations

import time
from datetime import date

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction


class Command(BaseCommand):
    help = "Rebuild the dashboard's per-day rollups from the runs (all days, or from --since on)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--since", help="first UTC day to rebuild, YYYY-MM-DD (default: every day)")

    def handle(self, *args, **opts) -> None:
        since = None
        if opts["since"]:
            try:
                since = date.fromisoformat(opts["since"])
            except ValueError as exc:
                raise CommandError(f"--since must be a day, YYYY-MM-DD, not {opts['since']!r}") from exc
        started = time.perf_counter()
        # One transaction: readers see the old rows until the new ones are all there.
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SELECT runs_dayrollup_rebuild(%s)", [since])
            rows = cur.fetchone()[0]
        self.stdout.write(f"{rows} rollup rows rebuilt{f' from {since}' if since else ''} "
                          f"in {time.perf_counter() - started:.1f} s")
