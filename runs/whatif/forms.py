from __future__ import annotations

import math
from dataclasses import fields

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.error_text import untrusted_json_error
from runs.core.models import Policy
from runs.policies.services import COLUMNS
from tracing.core import untrusted_json
from tracing.core.watchdog import Ladder, Thresholds, Windows

SWEEPABLE = [f"{section}.{f.name}" for section, kind in (("thresholds", Thresholds), ("windows", Windows),
                                                          ("ladder", Ladder)) for f in fields(kind) if f.name != "tiers"]


class WhatIfForm(forms.Form):
    policy = forms.ModelChoiceField(label=_("Policy"), queryset=Policy.objects.none(), required=False, empty_label=_("— built-in default —"))
    config = forms.CharField(label=_("Config"), widget=forms.Textarea(attrs={"rows": 18, "class": "mono"}),
                             help_text=_("the policy to replay (JSON: thresholds, windows, ladder, enabled...)"))
    sweep_path = forms.ChoiceField(choices=[("", _("no sweep")), *[(p, p) for p in SWEEPABLE]], required=False,
                                   label=_("sweep field"))
    sweep_values = forms.CharField(label=_("Sweep values"), required=False, max_length=400, help_text=_("comma-separated, e.g. 6, 8, 10, 12"))
    task = forms.CharField(label=_("Task"), required=False, max_length=80)
    model = forms.CharField(label=_("Model"), required=False, max_length=120)
    source = forms.CharField(label=_("Source"), required=False, max_length=40)

    def __init__(self, *args, project_id: int | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = Policy.objects.for_project(project_id).latest_versions()

    def clean(self):
        data = super().clean()
        try:
            config = untrusted_json.loads(data.get("config") or "", where="the policy", root="policy")
        except untrusted_json.UntrustedJsonError as exc:
            self.add_error("config", untrusted_json_error(exc))
            return data
        if not isinstance(config, dict):
            self.add_error("config", _('the policy must be a JSON object: {"thresholds": {...}, "ladder": {...}}'))
            return data
        config = {k: v for k, v in config.items() if k not in COLUMNS}
        data["config_obj"] = config
        values: list[float] = []
        raw = (data.get("sweep_values") or "").strip()
        if data.get("sweep_path"):
            try:
                values = [float(v) if "." in v else int(v) for v in (x.strip() for x in raw.split(",")) if v]
            except ValueError:
                self.add_error("sweep_values", _("numbers separated by commas"))
            if not all(math.isfinite(v) for v in values):
                self.add_error("sweep_values", _("finite numbers only"))
            elif not values:
                self.add_error("sweep_values", _("give the values to sweep"))
        data["values"] = values
        return data
