"""Evaluations: a task set × a model × strategies × reruns, under one budget (issue 17)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.urls import reverse

from runs.core.models import Policy, Run, Task


class Evaluation(models.Model):
    """The settings every run of the evaluation shares; its runs are ordinary
    runs, linked through EvaluationRun with their strategy."""

    name = models.CharField(max_length=200, blank=True)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="evaluations")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    tasks = models.ManyToManyField(Task, related_name="evaluations")
    strategies = ArrayField(models.CharField(max_length=20))
    reruns = models.PositiveIntegerField()
    provider = models.CharField(max_length=10, choices=Run.Provider.choices, default=Run.Provider.SIM)
    model_name = models.CharField(max_length=120, default="sim")
    base_url = models.CharField(max_length=300, blank=True)  # blank: the provider's configured endpoint
    mode = models.CharField(max_length=5, choices=Run.Mode.choices, default=Run.Mode.TOOLS)
    temperature = models.FloatField(default=0.0)
    # The one budget: model turns (scripted calls count too), tokens, wall time
    # and cost at the price table's prices (null: no cost limit, as on a run;
    # simulated and local models cost nothing, so only a priced model spends it).
    max_steps = models.PositiveIntegerField()
    max_tokens = models.PositiveIntegerField()
    max_seconds = models.PositiveIntegerField()
    max_cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    # The watchdog policy of the "react" strategy ("react_off" runs without one).
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, null=True, blank=True, related_name="evaluations")
    seed = models.BigIntegerField(null=True, blank=True)
    settings = models.JSONField(default=dict, blank=True)  # sim knobs, shared by every run

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(reruns__gte=1), name="evaluation_reruns_positive"),
            models.CheckConstraint(condition=Q(max_steps__gte=1) & Q(max_tokens__gte=1) & Q(max_seconds__gte=1),
                                   name="evaluation_budget_positive"),
            models.CheckConstraint(condition=Q(max_cost__gt=0), name="evaluation_max_cost_positive"),
        ]

    def __str__(self) -> str:
        return self.name or f"evaluation {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("evaluations:detail", args=[self.pk])


class EvaluationRun(models.Model):
    """One run of an evaluation, and what the evaluation measures of it when it
    has ended (filled from its steps once, so the page never reads steps)."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="entries")
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="evaluation_entry")
    strategy = models.CharField(max_length=20)
    rerun = models.PositiveIntegerField()
    measured = models.BooleanField(default=False)
    # Share of the final answer's core facts some observation supports (None: no fact stated).
    coverage = models.FloatField(null=True, blank=True)
    actions = models.PositiveIntegerField(default=0)  # the model's own calls and answer, scripted calls left out
    invalid_actions = models.PositiveIntegerField(default=0)  # unparsable output, an unknown or unoffered tool
    tool_errors = models.PositiveIntegerField(default=0)  # tool results with status error or timeout

    class Meta:
        # The run list filtered to one strategy of one evaluation (every cell's link).
        indexes = [models.Index(fields=["evaluation", "strategy"], name="evalrun_strategy_idx")]

    def __str__(self) -> str:
        return f"{self.strategy} run {self.run_id} of evaluation {self.evaluation_id}"
