"""Deciding approvals (one decision wins) and expiring the ones nobody decided."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from runs.approvals.models import Approval
from runs.approvals.pause import approval_ttl
from runs.core.models import Run
from runs.launch.services import run_enqueue
from tracing.core import untrusted_json
from tracing.store.recorder import clean_value
from tracing.store.signals import send_run_ended

REASON_CHARS = 2000
ARGS_CHARS = 20_000
VERDICTS = (Approval.Status.APPROVED, Approval.Status.EDITED, Approval.Status.DENIED)


@dataclass
class ApprovalError(ValueError):
    """Why a decision was not taken, in words for the reviewer; `conflict`:
    someone else decided first (or it expired), so the page is stale."""

    message: str
    conflict: bool = False

    def __str__(self) -> str:
        return self.message


def _parse_args(text: str) -> dict:
    if len(text) > ARGS_CHARS:
        raise ApprovalError(f"The arguments are longer than {ARGS_CHARS} characters.")
    if "\x00" in text:
        raise ApprovalError("The arguments hold a NUL character.")
    try:
        # The loader of every JSON form field: a lone surrogate escape is refused
        # naming where, an escaped NUL kept as U+FFFD (Postgres takes neither).
        value = untrusted_json.loads(text, where="the arguments", root="arguments")
    except untrusted_json.UntrustedJsonError as exc:
        raise ApprovalError(f"The arguments are not valid JSON: {str(exc)[:200]}") from exc
    if not isinstance(value, dict):
        raise ApprovalError('The arguments must be a JSON object, e.g. {"text": "..."}.')
    return clean_value(value)


def _stale(approval: Approval) -> ApprovalError:
    who = approval.decided_by.get_username() if approval.decided_by else "nobody"
    when = approval.decided_at.strftime("%Y-%m-%d %H:%M:%S") if approval.decided_at else "?"
    if approval.status == Approval.Status.EXPIRED:
        return ApprovalError(f"This request expired at {when}; the run has ended.", conflict=True)
    if approval.status == Approval.Status.CANCELLED:
        return ApprovalError("The run was stopped while this request waited; nothing to decide.", conflict=True)
    return ApprovalError(f"Already decided: {approval.get_status_display()} by {who} at {when} UTC.", conflict=True)


def approval_decide(*, approval_id: int, user, verdict: str, args_text: str = "", reason: str = "") -> Approval:
    """Approve, edit or deny a pending call, then resume its run. Of two
    reviewers deciding at once, the first wins and the second is told."""
    if verdict not in VERDICTS:
        raise ApprovalError(f"Unknown decision {verdict[:40]!r}: approved, edited or denied.")
    reason = reason.strip()
    if "\x00" in reason or len(reason) > REASON_CHARS:
        raise ApprovalError(f"The reason must be at most {REASON_CHARS} characters, without NUL.")
    if verdict == Approval.Status.DENIED and not reason:
        raise ApprovalError("Say why the call is denied: the agent reads the reason.")
    args = _parse_args(args_text) if verdict == Approval.Status.EDITED else None
    approvals_expire()  # an expired request is never approved late
    with transaction.atomic():
        approval = Approval.objects.select_for_update(of=("self",)).select_related("decided_by").get(pk=approval_id)
        if approval.status != Approval.Status.PENDING:
            # Waiting for the lock, Postgres re-read the locked row but not the
            # decider joined to it (an outer join re-checked after a wait keeps
            # its old, empty side): read both again, now that the winner committed.
            raise _stale(Approval.objects.select_related("decided_by").get(pk=approval_id))
        approval.status, approval.decided_args, approval.reason = verdict, args, reason
        approval.decided_by, approval.decided_at = user, timezone.now()
        approval.save(update_fields=["status", "decided_args", "reason", "decided_by", "decided_at"])
        celery_id = str(uuid.uuid4())
        resumed = Run.objects.filter(pk=approval.run_id, status=Run.Status.AWAITING).update(
            status=Run.Status.QUEUED, celery_id=celery_id, reason="")
    if resumed:
        run = Run.objects.get(pk=approval.run_id)
        run_enqueue(run=run, undo=lambda: _undo(approval, run))
    return approval


def _undo(approval: Approval, run: Run) -> None:
    """The broker refused the resume: put the request back as it was."""
    with transaction.atomic():
        Approval.objects.filter(pk=approval.pk).update(status=Approval.Status.PENDING, decided_args=None, reason="",
                                                       decided_by=None, decided_at=None)
        Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(status=Run.Status.AWAITING)


def approvals_expire(now=None) -> int:
    """End the runs whose request waited past its time; returns how many."""
    now = now or timezone.now()
    ended = []
    with transaction.atomic():
        due = list(Approval.objects.select_for_update(skip_locked=True)
                   .filter(status=Approval.Status.PENDING, expires_at__lte=now))
        for approval in due:
            approval.status, approval.decided_at = Approval.Status.EXPIRED, now
            approval.save(update_fields=["status", "decided_at"])
            hours = approval_ttl().total_seconds() / 3600
            reason = (f"the call to {approval.tool} (step {approval.step_index}) waited for approval longer than "
                      f"{hours:g} h and expired; it did not run")
            if Run.objects.filter(pk=approval.run_id, status=Run.Status.AWAITING).update(
                    status=Run.Status.STOPPED, stopped_by="approval", reason=reason, finished_at=now):
                ended.append(approval.run_id)
    for run_id in ended:
        send_run_ended(run_id)
    return len(due)
