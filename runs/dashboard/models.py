"""Per-day rollups of finished runs (issue 31): what the dashboard reads instead
of scanning the period's runs.

One row per (project, UTC day, task, policy, model, provider, mode) of the
runs the dashboard counts (ended, not forks). Postgres keeps the rows: a
trigger on runs_run (migration 0021) subtracts a run's old contribution and
adds its new one in one upsert, whatever writes the run (the recorder's end
of run, a re-analysis, an import, the API, a deletion or the retention sweep),
so no write path can forget it and two runs of one day ending at once add up
(ON CONFLICT DO UPDATE with deltas). `manage.py rollups` rebuilds them from
the runs.
"""

from __future__ import annotations

from django.db import models


class DayRollup(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    task = models.ForeignKey("runs.Task", on_delete=models.CASCADE, null=True, related_name="+", db_index=False)
    policy = models.ForeignKey("runs.Policy", on_delete=models.CASCADE, null=True, related_name="+", db_index=False)
    model_name = models.CharField(max_length=120)
    provider = models.CharField(max_length=10)
    mode = models.CharField(max_length=5)

    runs = models.IntegerField(default=0)
    scored = models.IntegerField(default=0)
    successes = models.IntegerField(default=0)
    over_max = models.IntegerField(default=0)  # stopped by max_steps
    interrupted = models.IntegerField(default=0)  # at least one intervention
    anchor_breaks = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)  # finished with a wrong answer (failures by layer)
    steps = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    # Mergeable counts as "kind:name" -> number (summed key by key; zeros dropped):
    # h:<step count> runs (the step histogram, one bucket per count, so its P95
    # is exact), d:<detector> and i:<tier> runs intervened, c:<step> model turns
    # and k:<step> their prompt tokens (context pressure), x:<step> observations
    # truncated, l:<layer> failed runs by guessed layer ("l:" none), and per tag
    # g: runs, gs: scored, gc: correct, gt: steps, go: over max.
    counts = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "day", "task", "policy", "model_name", "provider", "mode"],
                                    name="dayrollup_key", nulls_distinct=False),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.model_name}/{self.mode}: {self.runs} runs"


class DayCounts(models.Model):
    """DayRollup's counts summed over the whole of a project's day: what an
    unfiltered dashboard reads (thirty rows a month instead of every task ×
    model × policy × mode of each day). Kept by the same trigger."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    runs = models.IntegerField(default=0)
    counts = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "day"], name="daycounts_key")]

    def __str__(self) -> str:
        return f"{self.day}: {self.runs} runs"
