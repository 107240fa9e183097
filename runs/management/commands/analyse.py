from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from runs.launch.models import Run
from runs.lifecycle import on_run_ended


class Command(BaseCommand):
    help = ("Recompute stored runs' watchdog signals and anchor breaks with the current detectors "
            "(run it when a detector changes).")

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, action="append", help="a run id (repeatable)")
        parser.add_argument("--source", help="only runs from this source (agentlab, import, otlp, api...)")
        parser.add_argument("--all", action="store_true", help="every finished run")
        parser.add_argument("--anchoring-only", action="store_true", help="keep the stored signals")

    def handle(self, *args, **opts):
        runs = Run.objects.exclude(status__in=Run.LIVE_STATUSES)
        if opts["run"]:
            runs = runs.filter(pk__in=opts["run"])
        elif opts["source"]:
            runs = runs.filter(source=opts["source"])
        elif not opts["all"]:
            raise CommandError("say which runs: --run ID, --source NAME or --all")
        count = 0
        for run_id in runs.order_by("pk").values_list("pk", flat=True).iterator():
            on_run_ended(run_id=run_id, recompute_signals=not opts["anchoring_only"])
            count += 1
        self.stdout.write(f"analysed {count} runs")
