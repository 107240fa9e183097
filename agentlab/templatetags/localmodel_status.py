"""{% local_model_status %}: "local model: building / ready / failed (why)"."""

from __future__ import annotations

from django import template

from agentlab import localmodel

register = template.Library()


@register.inclusion_tag("agentlab/_local_model_status.html")
def local_model_status() -> dict:
    return {"lm": localmodel.status()}
