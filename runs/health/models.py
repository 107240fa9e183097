"""When the reconciler last swept: the run list's banner and /metrics read it."""

from __future__ import annotations

from django.db import models


class SweepMark(models.Model):
    """One row per sweeper (`name`): the last sweep's end and what it did."""

    name = models.CharField(max_length=40, primary_key=True)
    at = models.DateTimeField()
    host = models.CharField(max_length=200, blank=True)  # the worker that swept
    resent = models.PositiveIntegerField(default=0)
    resumed = models.PositiveIntegerField(default=0)
    ended = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.name} swept at {self.at:%H:%M:%S}"
