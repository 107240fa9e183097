"""A what-if replay job and its cached result."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agentlab.projects.models import Project
from runs.core.models import Policy


class WhatIfJob(models.Model):
    """A replay of one policy (or a sweep of one threshold) over stored runs.

    Cached by `key` = (policies, data snapshot): the same question over the
    same data is answered once. The snapshot (runs finished by `snapshot_at`,
    ids up to `snapshot_max_run`, the labels as they stood) is fixed when the
    job is created, so runs written meanwhile do not move its figures.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        ERROR = "error"

    key = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # The project whose runs it replays (part of `key`: two projects never share a cached answer).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    base_policy = models.ForeignKey(Policy, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # [tracing.core.watchdog.Policy.to_dict(), ...]: one per sweep value (or one).
    policies = models.JSONField()
    sweep_path = models.CharField(max_length=80, blank=True)
    sweep_values = models.JSONField(default=list, blank=True)
    filters = models.JSONField(default=dict, blank=True)
    snapshot_at = models.DateTimeField()
    snapshot_max_run = models.BigIntegerField(default=0)
    # {run_id: [[step, label], ...]} of labelled interruptions at creation.
    labels = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    total_runs = models.PositiveIntegerField(default=0)
    done_runs = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_s = models.FloatField(null=True, blank=True)

    def __str__(self) -> str:
        return f"what-if {self.pk}"

    @property
    def progress(self) -> float:
        return self.done_runs / self.total_runs if self.total_runs else (1.0 if self.status == "done" else 0.0)
