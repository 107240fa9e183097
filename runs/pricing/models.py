"""What a model's tokens cost: one row per model-name prefix."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q


class ModelPrice(models.Model):
    """Prices per million tokens (USD) for the models whose name starts with
    `prefix`; the longest matching prefix wins ("gpt-4o-mini" over "gpt-4o")."""

    prefix = models.CharField(max_length=120, unique=True,
                              help_text="model names starting with this (case-insensitive) get these prices")
    prompt_per_m = models.DecimalField(max_digits=12, decimal_places=4, validators=[MinValueValidator(0)],
                                       verbose_name="prompt $ / 1M tokens")
    completion_per_m = models.DecimalField(max_digits=12, decimal_places=4, validators=[MinValueValidator(0)],
                                           verbose_name="completion $ / 1M tokens")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["prefix"]
        constraints = [
            models.CheckConstraint(condition=Q(prompt_per_m__gte=0) & Q(completion_per_m__gte=0),
                                   name="model_price_not_negative"),
        ]

    def __str__(self) -> str:
        return self.prefix
