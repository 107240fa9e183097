from __future__ import annotations

from django.db import models

from tracing.steps import Step as StepRecord


class Step(models.Model):
    """One Thought, Action, Observation, Final, Intervention or Error of a run.

    Written as it happens, one commit per step; (run, index) is unique, so a
    re-delivered task can neither duplicate nor skip an index.
    """

    class Kind(models.TextChoices):
        THOUGHT = "thought"
        ACTION = "action"
        OBSERVATION = "observation"
        FINAL = "final"
        INTERVENTION = "intervention"
        ERROR = "error"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    text = models.TextField(blank=True)
    tool = models.CharField(max_length=120, blank=True)
    args = models.JSONField(null=True, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="step_run_index_uniq")]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.index} ({self.kind})"

    def to_record(self) -> StepRecord:
        return StepRecord(
            index=self.index,
            kind=self.kind,
            text=self.text,
            tool=self.tool or None,
            args=self.args,
            meta=self.meta,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=self.latency_ms,
        )

    @property
    def args_display(self) -> str:
        if self.args is None:
            return ""
        if isinstance(self.args, str):
            return self.args
        import json

        return json.dumps(self.args, ensure_ascii=False, sort_keys=True)
