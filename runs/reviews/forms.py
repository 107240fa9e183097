from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.models import Policy
from runs.launch.services import FORK_DEFAULT_TURNS, FORK_MAX_TURNS
from runs.reviews.models import LabelState

TIERS = ("hint", "redirect", "stop")


class QueueFilterForm(forms.Form):
    detector = forms.CharField(required=False, max_length=40)
    tier = forms.ChoiceField(choices=[("", _("any tier")), *((t, t) for t in TIERS)], required=False)
    # "name" for every version, "name:version" for one.
    policy = forms.CharField(required=False, max_length=90)
    task = forms.CharField(required=False, max_length=80)
    model = forms.CharField(required=False, max_length=120)
    label = forms.ChoiceField(choices=[("", _("any label state")), ("labelled", _("labelled")), *LabelState.choices],
                              required=False)
    sort = forms.ChoiceField(choices=[("newest", _("newest first")), ("uncertain", _("most uncertain first"))],
                             required=False)
    before = forms.CharField(required=False, max_length=80)


class ForkForm(forms.Form):
    policy = forms.ModelChoiceField(queryset=Policy.objects.none(), required=False, empty_label=_("watchdog off"))
    turns = forms.IntegerField(min_value=1, max_value=FORK_MAX_TURNS, initial=FORK_DEFAULT_TURNS, required=False)

    def __init__(self, *args, policies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = policies


class StepForkForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 10, "class": "mono"}), max_length=50_000,
                           strip=False)
    policy = forms.ModelChoiceField(queryset=Policy.objects.none(), required=False, empty_label=_("watchdog off"))
    turns = forms.IntegerField(min_value=1, max_value=FORK_MAX_TURNS, initial=FORK_DEFAULT_TURNS)

    def __init__(self, *args, policies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = policies
