"""Cost of tokens: one price row per model-name prefix (ModelPrice), the price
table read once per request, matched by prefix.

Cost is computed from the stored token counts at today's prices, not frozen at
record time: editing a price re-prices history, which is what a user fixing a
wrong price expects, and runs imported without any cost get one too.
"""

from __future__ import annotations

import math
from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from runs.agent.loop import Price


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


# Providers whose tokens cost nothing: the simulated model and the local one.
FREE_PROVIDERS = frozenset({"sim", "local"})
ZERO = Price()

# Published list prices (USD per million tokens) of common OpenAI-compatible
# model names, the table's first content (migration); edited in the UI after.
DEFAULT_PRICES: dict[str, tuple[str, str]] = {
    "gpt-4o": ("2.50", "10.00"),
    "gpt-4o-mini": ("0.15", "0.60"),
    "gpt-4.1": ("2.00", "8.00"),
    "gpt-4.1-mini": ("0.40", "1.60"),
    "gpt-4.1-nano": ("0.10", "0.40"),
    "gpt-4-turbo": ("10.00", "30.00"),
    "gpt-3.5-turbo": ("0.50", "1.50"),
    "o1": ("15.00", "60.00"),
    "o1-mini": ("1.10", "4.40"),
    "o3": ("2.00", "8.00"),
    "o3-mini": ("1.10", "4.40"),
    "o4-mini": ("1.10", "4.40"),
}


class PriceTable:
    def __init__(self, rows: list[tuple[str, Decimal, Decimal]]) -> None:
        # Longest prefix first: the first match is the most specific.
        self.rows = sorted(((p.lower(), float(a), float(b)) for p, a, b in rows), key=lambda r: -len(r[0]))

    @classmethod
    def load(cls) -> PriceTable:
        return cls(list(ModelPrice.objects.values_list("prefix", "prompt_per_m", "completion_per_m")))

    def price_for(self, provider: str, model_name: str) -> Price:
        if provider in FREE_PROVIDERS:
            return ZERO
        name = (model_name or "").lower()
        for prefix, prompt, completion in self.rows:
            if name.startswith(prefix):
                return Price(prompt, completion)
        return ZERO

    def run_cost(self, run) -> float:
        return self.price_for(run.provider, run.model_name).cost(run.prompt_tokens, run.completion_tokens)


def price_of(provider: str, model_name: str, table: PriceTable | None = None) -> Price:
    """The price of a model, reading the table only when it can matter."""
    if provider in FREE_PROVIDERS:
        return ZERO
    return (table or PriceTable.load()).price_for(provider, model_name)


def money(value: float | None) -> str:
    """A cost as people read it: small sums keep their significant digits."""
    if value is None:
        return "—"
    if value == 0:
        return "$0"
    if value < 0.01:
        # Two significant digits: a turn of a cheap model costs millionths.
        return f"${value:.{max(4, 1 - math.floor(math.log10(value)))}f}".rstrip("0")
    return f"${value:,.2f}"
