"""python manage.py apitoken create --user NAME [--project SLUG] [--name LABEL] | list --user NAME | revoke PREFIX"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agentlab.projects.models import Membership
from agentlab.projects.services import project_named
from tracing.store.ingest.writes import token_create, token_revoke
from tracing.store.models import ApiToken


class Command(BaseCommand):
    help = "Create, list or revoke API tokens for the ingestion API and OTLP."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="print a new token (shown once)")
        create.add_argument("--user", required=True)
        create.add_argument("--name", default="cli")
        create.add_argument("--project", default=None, help="project slug (default: the only project)")
        listing = sub.add_parser("list", help="a user's tokens")
        listing.add_argument("--user", required=True)
        revoke = sub.add_parser("revoke", help="revoke a token by the prefix shown in `list`")
        revoke.add_argument("prefix")

    def _user(self, username: str):
        try:
            return get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist as exc:
            raise CommandError(f"no user named {username!r}") from exc

    def handle(self, *args, **opts):
        action = opts["action"]
        if action == "create":
            user = self._user(opts["user"])
            try:
                project = project_named(opts["project"])
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            if not Membership.objects.filter(user=user, project=project).exists():
                # The token would be refused at once: a token works for members only.
                raise CommandError(f"{user} is not a member of {project.slug}")
            _token, plain = token_create(user=user, project_id=project.pk, name=opts["name"])
            # Only the token on stdout, so `TOKEN=$(manage.py apitoken create ...)` works.
            self.stdout.write(plain)
        elif action == "list":
            for token in ApiToken.objects.filter(user=self._user(opts["user"])):
                state = f"revoked {token.revoked_at:%Y-%m-%d}" if token.revoked_at else "active"
                self.stdout.write(f"{token.prefix}…\t{token.name}\t{token.created_at:%Y-%m-%d %H:%M}\t{state}")
        else:
            tokens = list(ApiToken.objects.filter(prefix=opts["prefix"], revoked_at__isnull=True))
            if len(tokens) != 1:
                raise CommandError(f"{len(tokens)} active tokens have the prefix {opts['prefix']!r}; need exactly one")
            token_revoke(token=tokens[0])
            self.stdout.write(f"revoked {tokens[0].prefix}…")
