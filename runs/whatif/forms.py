from __future__ import annotations

import json
from dataclasses import fields

from django import forms

from runs.policies.models import Policy
from runs.policies.services import COLUMNS
from tracing.watchdog import Ladder, Thresholds, Windows

SWEEPABLE = [f"{section}.{f.name}" for section, kind in (("thresholds", Thresholds), ("windows", Windows),
                                                          ("ladder", Ladder)) for f in fields(kind) if f.name != "tiers"]


class WhatIfForm(forms.Form):
    policy = forms.ModelChoiceField(queryset=Policy.objects.none(), required=False, empty_label="— built-in default —")
    config = forms.CharField(widget=forms.Textarea(attrs={"rows": 18, "class": "mono"}),
                             help_text="the policy to replay (JSON: thresholds, windows, ladder, enabled...)")
    sweep_path = forms.ChoiceField(choices=[("", "no sweep"), *[(p, p) for p in SWEEPABLE]], required=False,
                                   label="sweep field")
    sweep_values = forms.CharField(required=False, max_length=400, help_text="comma-separated, e.g. 6, 8, 10, 12")
    task = forms.CharField(required=False, max_length=80)
    model = forms.CharField(required=False, max_length=120)
    source = forms.CharField(required=False, max_length=40)

    def __init__(self, *args, project_id: int | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = Policy.objects.for_project(project_id).latest_versions()

    def clean(self):
        data = super().clean()
        try:
            config = json.loads(data.get("config") or "")
        except json.JSONDecodeError as exc:
            self.add_error("config", f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")
            return data
        if isinstance(config, dict):
            config = {k: v for k, v in config.items() if k not in COLUMNS}
        data["config_obj"] = config
        values: list[float] = []
        raw = (data.get("sweep_values") or "").strip()
        if data.get("sweep_path"):
            try:
                values = [float(v) if "." in v else int(v) for v in (x.strip() for x in raw.split(",")) if v]
            except ValueError:
                self.add_error("sweep_values", "numbers separated by commas")
            if not values:
                self.add_error("sweep_values", "give the values to sweep")
        data["values"] = values
        return data
