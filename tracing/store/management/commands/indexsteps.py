from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import connection

from tracing.core.stepindex import index_steps


class Command(BaseCommand):
    help = "Fill the steps' search column (run list search) where it is empty; --redo re-indexes every step."

    def add_arguments(self, parser):
        parser.add_argument("--redo", action="store_true", help="re-index steps that already have a search column")

    def handle(self, *args, **opts):
        def progress(n: int) -> None:
            if n % 100_000 == 0:
                self.stdout.write(f"{n} steps indexed…")

        total = index_steps(connection, redo=opts["redo"], progress=progress)
        self.stdout.write(f"{total} steps indexed")
