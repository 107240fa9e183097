"""`pluralize` for every language the interface speaks (a template builtin, see settings.TEMPLATES).

Django's filter adds English endings ("s", "ies"), which a Chinese sentence
must not get: Chinese nouns have no plural form. In English it is Django's own.
Sentences whose words change with the count (is/are) use {% blocktranslate count %}.
"""

from __future__ import annotations

from django import template
from django.template import defaultfilters
from django.utils.translation import get_language

register = template.Library()


@register.filter(is_safe=False)
def pluralize(value, arg: str = "s") -> str:
    if not (get_language() or "en").startswith("en"):
        return ""
    return defaultfilters.pluralize(value, arg)
