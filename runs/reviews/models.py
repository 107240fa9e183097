"""The review queue's tables: one item per interruption step, and reviewers' labels."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class LabelState(models.TextChoices):
    """An item's denormalised verdict, kept by review_label() so the queue can
    filter on it without reading labels."""

    UNLABELLED = "unlabelled", _("unlabelled")
    JUSTIFIED = "justified", _("justified")
    WRONGLY_KILLED = "wrongly_killed", _("wrongly killed")
    UNSURE = "unsure", _("unsure")
    # Current labels from different reviewers disagree.
    DISPUTED = "disputed", _("disputed")


class ForkOutcome(models.TextChoices):
    NONE = "", _("no fork")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    # Ran out of its steps or was stopped again: the loop was real.
    LOOPED = "looped", _("looped again")
    ERROR = "error", _("error")


class ReviewItem(models.Model):
    """One interruption (watchdog hint / redirect / stop, budget truncation, user
    stop) of one run, with what the queue filters and sorts on copied in at sync
    time, so a queue page is one query over this table."""

    # db_index off where a composite index below starts with the column.
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="review_items", db_index=False)
    # The intervention step's index; no FK so the steps table stays free to be
    # partitioned by time (DESIGN.md 3), and (run, index) is its natural key.
    step_index = models.PositiveIntegerField()
    detector = models.CharField(max_length=40)
    tier = models.CharField(max_length=10)
    # From the step's evidence (the policy that decided), else the run's.
    policy_name = models.CharField(max_length=80, blank=True)
    policy_version = models.PositiveIntegerField(null=True, blank=True)
    # The threshold that fired, as a short group key ("similarity>=0.8"), and
    # the snapshot of the values and scores behind it.
    threshold = models.CharField(max_length=120, blank=True)
    thresholds = models.JSONField(default=dict, blank=True)
    task = models.ForeignKey("runs.Task", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             db_index=False)
    model_name = models.CharField(max_length=120, blank=True)
    run_status = models.CharField(max_length=10, blank=True)
    # When the interruption happened (the step's time): "newest first".
    created_at = models.DateTimeField(default=timezone.now)

    label = models.CharField(max_length=16, choices=LabelState.choices, default=LabelState.UNLABELLED)
    label_count = models.PositiveSmallIntegerField(default=0)
    # From the evidence alone (how close the score was to its threshold);
    # `uncertainty` then folds in labels and the fork's outcome.
    prior = models.FloatField(default=0.5)
    uncertainty = models.FloatField(default=0.5)

    # The latest counterfactual continuation started from this item.
    fork = models.ForeignKey("runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="review_forks")
    fork_outcome = models.CharField(max_length=10, choices=ForkOutcome.choices, default=ForkOutcome.NONE, blank=True)
    # Model turns the fork took before it ended (answer, stop or error).
    fork_turns = models.PositiveIntegerField(null=True, blank=True)
    fork_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["run", "step_index"], name="review_item_run_step_uniq")]
        indexes = [
            # The two queue orders, keyset on (key, id).
            models.Index(fields=["-created_at", "-id"], name="review_newest_idx"),
            models.Index(fields=["-uncertainty", "-id"], name="review_uncertain_idx"),
            # The selective filters: a reviewer works through one detector, or
            # through what is still unlabelled.
            models.Index(fields=["detector", "-created_at", "-id"], name="review_detector_idx"),
            models.Index(fields=["label", "-created_at", "-id"], name="review_label_idx"),
            models.Index(fields=["task", "-created_at", "-id"], name="review_task_idx"),
            # The false-kill figures read only what has a label or a fork.
            models.Index(fields=["detector", "tier"], name="review_figures_idx",
                         condition=Q(label_count__gt=0) | ~Q(fork_outcome="")),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.step_index} ({self.detector} {self.tier})"


class ReviewLabel(models.Model):
    """A reviewer's verdict on an item. A changed label is a new row; the old one
    stays as history (is_current=False, superseded_by the new one)."""

    class Value(models.TextChoices):
        JUSTIFIED = "justified", _("justified")
        WRONGLY_KILLED = "wrongly_killed", _("wrongly killed exploration")
        UNSURE = "unsure", _("unsure")

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="labels")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_labels")
    value = models.CharField(max_length=16, choices=Value.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    is_current = models.BooleanField(default=True)
    superseded_by = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["item", "created_at", "id"]
        permissions = [("label_interruption", "Can label interruptions and fork runs to check them")]
        constraints = [
            # The service serialises on the item row; this is the guarantee if
            # anything else writes labels.
            models.UniqueConstraint(fields=["item", "reviewer"], condition=Q(is_current=True),
                                    name="review_label_one_current"),
            models.CheckConstraint(condition=Q(value__in=["justified", "wrongly_killed", "unsure"]),
                                   name="review_label_value_valid"),
        ]
        indexes = [models.Index(fields=["item", "created_at"], name="review_label_item_idx")]

    def __str__(self) -> str:
        return f"{self.value} by {self.reviewer_id} on item {self.item_id}"
