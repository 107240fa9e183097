"""Named, versioned watchdog policies."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agentlab.projects.models import Project
from tracing.watchdog import Policy as WatchdogPolicy


class PolicyQuerySet(models.QuerySet):
    def for_project(self, project_id: int | None) -> PolicyQuerySet:
        return self.filter(project_id=project_id)

    def latest_versions(self) -> PolicyQuerySet:
        return self.order_by("name", "-version").distinct("name")


class Policy(models.Model):
    """A named, versioned watchdog policy. Editing saves a new version, so a run
    always points at the exact thresholds it ran under."""

    # Each project has its own policies (and its own `default`).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="policies")
    name = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    description = models.CharField(max_length=300, blank=True)
    # tracing.watchdog.Policy.to_dict() without name/version: thresholds,
    # windows, ladder, enabled, use_complexity.
    config = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PolicyQuerySet.as_manager()

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["project", "name", "version"], name="policy_name_version_uniq")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def as_policy(self):
        return WatchdogPolicy.from_dict(
            {**self.config, "name": self.name, "version": self.version, "description": self.description}
        )

