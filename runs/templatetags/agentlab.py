from __future__ import annotations

from django import template

from runs.core import step_payloads as payloads
from runs.core import step_rows
from runs.core.anchor_names import anchor_label
from runs.core.anchor_reasons import anchor_reason
from runs.core.prices import money
from runs.core.terms import layer_description as layer_description_of
from runs.core.terms import term as term_of
from tracing.core import shown_json

register = template.Library()


@register.filter
def pretty_json(value) -> str:
    """Indented JSON as plain text (autoescaped where it is shown)."""
    try:
        return shown_json.dumps(value, indent=2, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def term(value) -> str:
    """A stored status, step kind, detector or tier as the page's language says it (runs/core/terms.py)."""
    return term_of(value)


@register.filter
def layer_description(layer) -> str:
    """A failure layer's meaning in the page's language (`layer` has .key and .description)."""
    return layer_description_of(getattr(layer, "key", ""), getattr(layer, "description", ""))


@register.filter
def num(value, digits: int = 2) -> str:
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return ""


@register.filter
def pct(value) -> str:
    """0.0153 -> '1.5%' ('—' when there is no value)."""
    try:
        return f"{float(value) * 100:.1f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def duration(seconds) -> str:
    """A run's wall time: '—' when unknown, milliseconds under a second (a
    simulated run takes tens of them: '0.0 s' read as "not measured")."""
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.0005 else "< 1 ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


@register.filter(name="anchor_label")
def anchor_label_filter(pattern) -> str:
    """An anchoring pattern or finding in plain words ("phantom_call" -> "claimed a call it never made")."""
    return anchor_label(str(pattern or ""))


@register.filter
def step_text(step, label: str) -> str:
    """The step's text as the timeline shows it (runs.core.step_payloads: JSON folded, Markdown sanitised)."""
    return payloads.step_text_html(step, label)


@register.filter
def args_html(args) -> str:
    return payloads.args_html(args)


@register.filter(name="money")
def money_filter(value) -> str:
    """A cost in dollars ('—' when unknown): runs.core.prices.money."""
    try:
        return money(None if value is None or value == "" else float(value))
    except (TypeError, ValueError):
        return "—"


@register.simple_tag(takes_context=True)
def step_row(context) -> str:
    """``step``'s row (runs/_step_row.html), rendered once per content (runs.core.step_rows)."""
    return step_rows.render_row(context)


@register.filter
def step_cost(step, price) -> str:
    """What a turn's tokens cost at `price` (the run's model's)."""
    if price is None or not (step.prompt_tokens or step.completion_tokens):
        return ""
    return money(price.cost(step.prompt_tokens, step.completion_tokens))


@register.filter(name="anchor_reason")
def anchor_reason_filter(reason: str) -> str:
    """A detector's reason in the page's language: its sentence translated, the agent's quoted words as they were."""
    return anchor_reason(reason)
