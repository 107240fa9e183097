from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agentlab.projects.services import project_named
from runs.imports.services import import_lines


class Command(BaseCommand):
    help = "Import trajectories (JSONL, the format of shared/eval/README.md) as runs; bad lines are reported and skipped."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+")
        parser.add_argument("--source", default="", help="source label (default: each line's 'source')")
        parser.add_argument("--user", default=None, help="owner user name")
        parser.add_argument("--project", default=None, help="project slug (default: the only project)")

    def handle(self, *args, **opts):
        owner = None
        if opts["user"]:
            owner = get_user_model().objects.filter(username=opts["user"]).first()
            if owner is None:
                raise CommandError(f"no user {opts['user']!r}")
        try:
            project = project_named(opts["project"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        failed = 0
        for name in opts["files"]:
            path = Path(name)
            if not path.is_file():
                raise CommandError(f"{name}: no such file")
            with path.open("rb") as fh:
                result = import_lines(fh, project_id=project.pk, owner=owner, source=opts["source"])
            for lineno, message in result.errors:
                self.stderr.write(f"{name}:{lineno}: {message}")
            failed += len(result.errors)
            already = f", {len(result.existing)} already imported" if result.existing else ""
            self.stdout.write(f"{name}: imported {len(result.run_ids)} runs{already}, rejected {len(result.errors)} lines")
        if failed:
            raise CommandError(f"{failed} line(s) rejected; the others were imported")
