"""Reviewers' verdicts on runs' shown breaks, and each project's calibration of
the break patterns (runs.breaks.rule decides; these tables remember)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from runs.breaks import rule


class Verdict(models.TextChoices):
    RIGHT = rule.RIGHT, _("right step")
    EARLIER = rule.EARLIER, _("the lapse is earlier")
    LATER = rule.LATER, _("the lapse is later")
    NONE = rule.NONE, _("no lapse")


class BreakLabel(models.Model):
    """A reviewer's verdict on the break a run showed: keyed to the run and the
    step and pattern judged, so a re-analysis that moves or drops the run's
    break never touches it (and the pattern keeps the verdicts it earned).
    One per run, reviewer and step: labelling the same step again updates it."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="break_labels", db_index=False)
    # The run's, copied: the Breaks page aggregates one project's labels
    # without joining the runs.
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+", db_index=False)
    step = models.PositiveIntegerField()
    pattern = models.CharField(max_length=40)
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="break_labels")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "step", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "reviewer", "step"], name="break_label_run_reviewer_step_uniq"),
            models.CheckConstraint(condition=Q(verdict__in=list(rule.VERDICTS)), name="break_label_verdict_valid"),
        ]
        indexes = [
            # The Breaks page's tallies and the demotion check: one project's
            # labels of one pattern.
            models.Index(fields=["project", "pattern"], name="break_label_project_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} on run {self.run_id} step {self.step} ({self.pattern})"


class BreakSettings(models.Model):
    """A project's demotion rule; a project without a row has the defaults."""

    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="break_settings")
    floor = models.FloatField(default=rule.DEFAULT_FLOOR)
    min_labels = models.PositiveIntegerField(default=rule.DEFAULT_MIN_LABELS)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(floor__gte=0) & Q(floor__lte=1),
                                              name="break_settings_floor_fraction")]

    def __str__(self) -> str:
        return f"{self.project_id}: floor {self.floor:.0%} over {self.min_labels}"


class Override(models.TextChoices):
    AUTO = rule.AUTO, "by the rule"
    SHOWN = rule.FORCE_SHOWN, "kept shown by an admin"
    DEMOTED = rule.FORCE_DEMOTED, "demoted by an admin"


class PatternState(models.Model):
    """Whether a pattern is demoted in a project, as last decided (the label
    service and the admin's override keep it): analysis reads this, never
    recounts labels. The row is also the lock that serialises the decision."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+", db_index=False)
    pattern = models.CharField(max_length=40)
    override = models.CharField(max_length=10, choices=Override.choices, default=Override.AUTO, blank=True)
    demoted = models.BooleanField(default=False)
    changed_at = models.DateTimeField(default=timezone.now)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")

    class Meta:
        ordering = ["project", "pattern"]
        constraints = [models.UniqueConstraint(fields=["project", "pattern"], name="pattern_state_project_uniq")]

    def __str__(self) -> str:
        return f"{self.pattern} in {self.project_id}: {'demoted' if self.demoted else 'shown'}"
