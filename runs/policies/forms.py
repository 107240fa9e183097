from __future__ import annotations

import json

from django import forms

from runs.policies.services import COLUMNS
from tracing.watchdog import Policy as WatchdogPolicy
from tracing.watchdog import PolicyError


class PolicyForm(forms.Form):
    name = forms.SlugField(max_length=80)
    description = forms.CharField(max_length=300, required=False)
    config = forms.CharField(widget=forms.Textarea(attrs={"rows": 28, "class": "mono"}),
                             help_text="thresholds, windows, ladder, enabled, use_complexity — JSON; missing keys take the defaults")

    def clean(self):
        data = super().clean()
        raw = data.get("config")
        if raw is None:
            return data
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            self.add_error("config", f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")
            return data
        if isinstance(parsed, dict):
            for key in COLUMNS:
                if key in parsed:
                    self.add_error("config", f"policy field '{key}': set it in its own field, not in the JSON")
                    return data
        try:
            policy = WatchdogPolicy.from_dict(parsed)
        except PolicyError as exc:
            self.add_error("config", str(exc))
            return data
        data["policy"] = policy
        return data
