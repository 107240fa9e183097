"""Pending and decided approvals (the sandbox the writing tool writes to is runs.core.models.SandboxMessage)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Approval(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        APPROVED = "approved", _("approved")
        EDITED = "edited", _("approved with edited arguments")
        DENIED = "denied", _("denied")
        EXPIRED = "expired", _("expired")
        # The run was stopped (or ended) while the call waited.
        CANCELLED = "cancelled", _("cancelled")

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="approvals")
    # The paused action step (no FK: the steps table is partitioned by time).
    step_index = models.PositiveIntegerField()
    tool = models.CharField(max_length=80)
    args = models.JSONField(default=dict, blank=True)
    # The flagged observation the write followed, if any (an injection attempt).
    after_injection = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_args = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "step_index"], name="approval_run_step_uniq")]
        indexes = [models.Index(fields=["status", "expires_at"], name="approval_status_expiry_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.step_index}: {self.tool} ({self.status})"
