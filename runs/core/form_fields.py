"""Form fields more than one feature's forms take: the model picker (and the
modes a provider allows), the cost
budget and the run filters' label fields (tag, metadata, session)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.models import Run
from tracing.core.label_limits import MAX_METADATA_KEY_CHARS, MAX_METADATA_VALUE_CHARS, MAX_SESSION_CHARS, MAX_TAG_CHARS

MODEL_CHOICES = [
    ("sim", _("sim — simulated model (test double)")),
    ("local", _("local — Gemma 3 270M via llama.cpp (text mode)")),
    ("openai", _("OpenAI-compatible endpoint (set OPENAI_BASE_URL)")),
]

# Models that work in one mode only: the local Gemma 3 270M is a base model
# without tool calling, reached through the completions endpoint (text mode).
MODES_OF_PROVIDER = {"local": [Run.Mode.TEXT]}


def cost_budget_field() -> forms.DecimalField:
    """A run's and an evaluation's cost budget: blank is no limit; zero and
    below are refused like a zero step budget (Run.max_cost's constraint)."""
    return forms.DecimalField(required=False, min_value=Decimal("0.0001"), max_value=Decimal("100000"),
                              max_digits=12, decimal_places=4, label=_("max cost ($)"),
                              help_text=_("Cost budget at the price table's prices; blank: none. "
                                        "Simulated and local models cost nothing."))


def _key_value(value: str) -> None:
    if value and "=" not in value:
        raise forms.ValidationError(_("Write a metadata filter as key=value."))


def label_filter_fields() -> tuple[forms.Field, forms.Field, forms.Field]:
    """The tag, metadata (key=value) and session filters, as the run list and the dashboard take them."""
    return (forms.CharField(required=False, max_length=MAX_TAG_CHARS),
            forms.CharField(required=False, max_length=MAX_METADATA_KEY_CHARS + MAX_METADATA_VALUE_CHARS + 1,
                            validators=[_key_value], help_text=_("key=value")),
            forms.CharField(required=False, max_length=MAX_SESSION_CHARS))
