"""A reviewer's verdict on a failed run's layer: one current label per run (the
last reviewer's word), so agreement with the guess is one join."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tracing.core.attribution import LAYERS


class LayerLabel(models.Model):
    Layer = models.TextChoices("Layer", [(layer.key, layer.name) for layer in LAYERS])

    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, related_name="layer_label")
    layer = models.CharField(max_length=16, choices=Layer.choices)
    # The guess the reviewer saw when deciding: a re-analysis may change the
    # run's guess later, and agreement is measured against what was shown.
    guessed = models.CharField(max_length=16, blank=True)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    note = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.layer}"

    @property
    def agrees(self) -> bool:
        return self.layer == self.guessed
