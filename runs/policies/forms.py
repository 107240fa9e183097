from __future__ import annotations

import json
from dataclasses import fields as dataclass_fields
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.error_text import policy_error, untrusted_json_error
from runs.core.terms import TERMS
from runs.policies.fields import FIELDS
from runs.policies.services import COLUMNS
from tracing.core import untrusted_json
from tracing.core.steps import TIERS
from tracing.core.watchdog import Ladder, PolicyError, Thresholds, Windows
from tracing.core.watchdog import Policy as WatchdogPolicy

# The sections of a policy, each a frozen dataclass of tracing.core.watchdog.
SECTIONS = {"thresholds": Thresholds, "windows": Windows, "ladder": Ladder}


def form_name(path: str) -> str:
    """A policy field's path ("ladder.stop_streak") as a form field's name."""
    return path.replace(".", "__")


def _field(path: str, kind: str) -> forms.Field:
    """The form field of a policy field; the watchdog's own validation
    (Policy.from_dict) still has the last word, its error put on this field."""
    doc = FIELDS[path]
    if path == "ladder.tiers":
        return forms.MultipleChoiceField(choices=[(t, TERMS[t]) for t in TIERS], widget=forms.CheckboxSelectMultiple,
                                         label=doc.label, help_text=doc.help, required=False)
    if kind == "float":  # every float of a policy is a share
        return forms.FloatField(min_value=0.0, max_value=1.0, label=doc.label, help_text=doc.help,
                                widget=forms.NumberInput(attrs={"step": "0.01"}))
    return forms.IntegerField(min_value=0, label=doc.label, help_text=doc.help)


def _types(section: str) -> dict[str, str]:
    return {f"{section}.{f.name}": f.type if isinstance(f.type, str) else f.type.__name__
            for f in dataclass_fields(SECTIONS[section])}


def section_paths(section: str) -> list[str]:
    return list(_types(section))


def initial_of(config: dict[str, Any]) -> dict[str, Any]:
    """A policy's to_dict() as the form's initial values: one per field, and the JSON."""
    initial: dict[str, Any] = {"enabled": config.get("enabled", True),
                               "use_complexity": config.get("use_complexity", True),
                               "config": json.dumps(config, indent=2)}
    for section in SECTIONS:
        for path in section_paths(section):
            initial[form_name(path)] = config.get(section, {}).get(path.split(".", 1)[1])
    return initial


class PolicyForm(forms.Form):
    """The editor: one field per setting, each explained; the whole policy as
    JSON is the advanced way (ticked, the JSON wins over the fields)."""

    name = forms.SlugField(label=_("Name"), max_length=80)
    description = forms.CharField(label=_("Description"), max_length=300, required=False)
    enabled = forms.BooleanField(required=False, label=FIELDS["enabled"].label, help_text=FIELDS["enabled"].help)
    use_complexity = forms.BooleanField(required=False, label=FIELDS["use_complexity"].label,
                                        help_text=FIELDS["use_complexity"].help)
    use_json = forms.BooleanField(required=False, label=_("edit as JSON"),
                                  help_text=_("save the JSON below instead of the fields above"))
    config = forms.CharField(widget=forms.Textarea(attrs={"rows": 24, "class": "mono"}), required=False,
                             label=_("policy as JSON"),
                             help_text=_("thresholds, windows, ladder, enabled, use_complexity; missing keys take "
                                       "the defaults"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for section in SECTIONS:
            for path, kind in _types(section).items():
                self.fields[form_name(path)] = _field(path, kind)
        if self.data.get("use_json"):
            # The fields are not what is saved: they need not validate.
            for section in SECTIONS:
                for path in section_paths(section):
                    self.fields[form_name(path)].required = False

    def sections(self) -> list[tuple[str, list[forms.BoundField]]]:
        return [(section, [self[form_name(p)] for p in section_paths(section)]) for section in SECTIONS]

    def clean(self):
        data = super().clean()
        if data.get("use_json"):
            return self._clean_json(data)
        if self.errors:
            return data
        config: dict[str, Any] = {"enabled": data["enabled"], "use_complexity": data["use_complexity"]}
        for section in SECTIONS:
            config[section] = {p.split(".", 1)[1]: data[form_name(p)] for p in section_paths(section)}
        # Ticked boxes have no order: the ladder's is hint, redirect, stop.
        config["ladder"]["tiers"] = [t for t in TIERS if t in config["ladder"]["tiers"]]
        try:
            data["policy"] = WatchdogPolicy.from_dict(config)
        except PolicyError as exc:
            target = form_name(exc.field)
            self.add_error(target if target in self.fields else None, policy_error(exc))
        return data

    def _clean_json(self, data: dict[str, Any]) -> dict[str, Any]:
        raw = data.get("config") or ""
        try:
            parsed = untrusted_json.loads(raw, where="the policy", root="policy")
        except untrusted_json.UntrustedJsonError as exc:
            self.add_error("config", untrusted_json_error(exc))
            return data
        if isinstance(parsed, dict):
            for key in COLUMNS:
                if key in parsed:
                    self.add_error("config", _("policy field '%(field)s': set it in its own field, not in the JSON")
                                   % {"field": key})
                    return data
        try:
            data["policy"] = WatchdogPolicy.from_dict(parsed)
        except PolicyError as exc:
            self.add_error("config", policy_error(exc))
        return data
