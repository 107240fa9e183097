from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.breaks import rule


class BreakSettingsForm(forms.Form):
    """The project's demotion rule; the floor as a percentage."""

    floor = forms.IntegerField(min_value=0, max_value=100, label=_("floor (%)"),
                               help_text=_("confirmed precision under which a pattern is demoted"))
    min_labels = forms.IntegerField(min_value=1, max_value=100_000, label=_("over at least"),
                                    help_text=_("labels before the floor applies"))


class OverrideForm(forms.Form):
    override = forms.ChoiceField(label=_("Override"), choices=[(o, o or "auto") for o in rule.OVERRIDES], required=False)
