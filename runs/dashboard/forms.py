from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.form_fields import label_filter_fields
from runs.core.models import Run
from runs.dashboard.selectors import default_period
from runs.date_filters import FilterDateField
from runs.launch.selectors import POLICY_OFF, RunFilters

# The longest period one request may aggregate; longer asks are refused with a
# message rather than silently clipped.
MAX_PERIOD_DAYS = 3660


class DashboardForm(forms.Form):
    since = FilterDateField()
    until = FilterDateField()
    task = forms.CharField(label=_("Task"), required=False, max_length=80)
    model = forms.CharField(label=_("Model"), required=False, max_length=120)
    mode = forms.ChoiceField(label=_("Mode"), choices=[("", _("any mode")), *Run.Mode.choices], required=False)
    policy = forms.CharField(label=_("Policy"), required=False, max_length=80, help_text=f"a policy name, or '{POLICY_OFF}'")
    tag, meta, session = label_filter_fields()

    def clean(self):
        data = super().clean()
        since, until = default_period()
        data["since"] = data.get("since") or since
        data["until"] = data.get("until") or until
        if data["since"] > data["until"]:
            self.add_error("since", _("since must be on or before until"))
        elif data["until"] - data["since"] > timedelta(days=MAX_PERIOD_DAYS):
            self.add_error("since", f"a period of at most {MAX_PERIOD_DAYS} days")
        return data

    def filters(self) -> RunFilters:
        # Live runs have no outcome yet: the figures are about finished runs.
        # A fork is a counterfactual continuation of a run (a reviewer's "what
        # if it had gone on"), not another run of the task: it is left out.
        return RunFilters.of(self.cleaned_data, finished=True, forks="no")
