"""End OTLP traces whose root span never arrived (INGEST_TRACE_TIMEOUT_S)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from tracing.store.guard import guard_stops_expire
from tracing.store.ingest.services import runs_ended, traces_close_stale


class Command(BaseCommand):
    help = ("End ingested OTLP traces that got no span for INGEST_TRACE_TIMEOUT_S and whose root never ended, "
            "and guarded API runs silent for GUARD_STOP_TIMEOUT_S after a stop.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--older-than", type=float, default=None,
                            help="seconds without a new span (default: INGEST_TRACE_TIMEOUT_S)")

    def handle(self, *args, older_than: float | None = None, **options) -> None:
        stopped = guard_stops_expire()
        runs_ended(stopped)
        if stopped:
            self.stdout.write(f"ended {len(stopped)} guarded run(s) after a stop: runs {', '.join(map(str, stopped))}")
        ended = traces_close_stale(older_than_s=older_than)
        self.stdout.write(f"ended {len(ended)} trace(s)" + (f": runs {', '.join(map(str, ended))}" if ended else ""))
