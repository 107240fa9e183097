"""The worker's side of approvals: open the request when the loop pauses on a
writing tool, give the loop the decision when the run resumes, cancel what
waits when the paused run is stopped. Handed to launching as its ApprovalGate
(runs.apps), so launching imports nothing of approvals."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from runs.agent.loop import ApprovalDecision, ApprovalLookup
from runs.approvals.models import Approval
from runs.launch.approval_gate import ApprovalGate
from tracing.store.models import Step

DECIDED = (Approval.Status.APPROVED, Approval.Status.EDITED, Approval.Status.DENIED)


def approval_ttl() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "APPROVAL_TTL_S", 24 * 3600)))


def approval_open(run_id: int) -> Approval | None:
    """The request for the run's paused action (the last action marked
    pending); opening it again (a redelivered message) finds the same row."""
    step = (Step.objects.filter(run_id=run_id, kind="action", meta__approval="pending")
            .order_by("-index").only("index", "tool", "args", "meta").first())
    if step is None:
        return None
    args = step.args if isinstance(step.args, dict) else {"input": step.args}
    approval, _ = Approval.objects.get_or_create(
        run_id=run_id, step_index=step.index,
        defaults={"tool": (step.tool or "")[:80], "args": args,
                  "after_injection": (step.meta or {}).get("after_injection"),
                  "expires_at": timezone.now() + approval_ttl()})
    return approval


def approval_lookup(run_id: int) -> ApprovalLookup:
    def lookup(index: int) -> ApprovalDecision | None:
        approval = (Approval.objects.filter(run_id=run_id, step_index=index, status__in=DECIDED)
                    .select_related("decided_by").first())
        if approval is None:
            return None
        by = approval.decided_by.get_username() if approval.decided_by else ""
        return ApprovalDecision(verdict=approval.status, args=approval.decided_args, reason=approval.reason, by=by)

    return lookup


def approvals_cancel(run_id: int) -> None:
    """A paused run was stopped: its pending request ends with it."""
    Approval.objects.filter(run_id=run_id, status=Approval.Status.PENDING).update(status=Approval.Status.CANCELLED)


GATE = ApprovalGate(lookup=approval_lookup, open=approval_open, cancel=approvals_cancel)
