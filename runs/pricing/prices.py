"""Cost of tokens: the price table read once per request, matched by prefix.

Cost is computed from the stored token counts at today's prices, not frozen at
record time: editing a price re-prices history, which is what a user fixing a
wrong price expects, and runs imported without any cost get one too.
"""

from __future__ import annotations

import math
from decimal import Decimal

from runs.agent.loop import Price
from runs.pricing.models import ModelPrice

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
