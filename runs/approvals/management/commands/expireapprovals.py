from django.core.management.base import BaseCommand

from runs.approvals.services import approvals_expire


class Command(BaseCommand):
    help = "End runs whose call to a writing tool waited for approval past APPROVAL_TTL_S."

    def handle(self, *args, **options):
        self.stdout.write(f"expired {approvals_expire()} request(s)")
