"""A figure with its interval, as the evaluation page shows it ("50.0% [24–76%]").

A filter, not an include: the page shows a dozen figures per strategy, and an
include per figure cost more than the rest of the page (bench/evaluation.py).
Only numbers go in, and they are formatted here; format_html escapes anyway.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from runs.core.prices import money

register = template.Library()

NONE = format_html('<span class="muted">{}</span>', "—")


@register.filter
def rate_ci(fig) -> str:
    if fig is None or fig.value is None:
        return NONE
    if fig.low is None:
        return format_html("{}%", f"{fig.value * 100:.1f}")
    return format_html('{}% <span class="ci">[{}–{}%]</span>', f"{fig.value * 100:.1f}", f"{fig.low * 100:.0f}",
                       f"{fig.high * 100:.0f}")


@register.filter
def mean_ci(fig, digits: int = 1) -> str:
    if fig is None or fig.value is None:
        return NONE
    d = int(digits)
    if fig.low is None:
        return format_html("{}", f"{fig.value:.{d}f}")
    return format_html('{} <span class="ci">[{}–{}]</span>', f"{fig.value:.{d}f}", f"{fig.low:.{d}f}",
                       f"{fig.high:.{d}f}")


@register.filter
def money_ci(fig) -> str:
    if fig is None or fig.value is None:
        return NONE
    if fig.low is None or fig.low == fig.high:
        return format_html("{}", money(fig.value))
    return format_html('{} <span class="ci">[{}–{}]</span>', money(fig.value), money(fig.low), money(fig.high))
