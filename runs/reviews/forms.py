from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.models import Policy
from runs.core.terms import TERMS
from runs.launch.services import FORK_DEFAULT_TURNS, FORK_MAX_TURNS
from runs.reviews.models import LabelState

TIERS = ("hint", "redirect", "stop")


class QueueFilterForm(forms.Form):
    detector = forms.CharField(label=_("Detector"), required=False, max_length=40)
    tier = forms.ChoiceField(label=_("Tier"), choices=[("", _("any tier")), *((t, TERMS[t]) for t in TIERS)], required=False)
    # "name" for every version, "name:version" for one.
    policy = forms.CharField(label=_("Policy"), required=False, max_length=90)
    task = forms.CharField(label=_("Task"), required=False, max_length=80)
    model = forms.CharField(label=_("Model"), required=False, max_length=120)
    label = forms.ChoiceField(label=_("Label"), choices=[("", _("any label state")), ("labelled", _("labelled")), *LabelState.choices],
                              required=False)
    sort = forms.ChoiceField(label=_("Sort"), choices=[("newest", _("newest first")), ("uncertain", _("most uncertain first"))],
                             required=False)
    before = forms.CharField(label=_("Before"), required=False, max_length=80)


class ForkForm(forms.Form):
    policy = forms.ModelChoiceField(label=_("Policy"), queryset=Policy.objects.none(), required=False, empty_label=_("watchdog off"))
    turns = forms.IntegerField(label=_("Turns"), min_value=1, max_value=FORK_MAX_TURNS, initial=FORK_DEFAULT_TURNS, required=False)

    def __init__(self, *args, policies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = policies


class StepForkForm(forms.Form):
    text = forms.CharField(label=_("Text"), widget=forms.Textarea(attrs={"rows": 10, "class": "mono"}), max_length=50_000,
                           strip=False)
    policy = forms.ModelChoiceField(label=_("Policy"), queryset=Policy.objects.none(), required=False, empty_label=_("watchdog off"))
    turns = forms.IntegerField(label=_("Turns"), min_value=1, max_value=FORK_MAX_TURNS, initial=FORK_DEFAULT_TURNS)

    def __init__(self, *args, policies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = policies
