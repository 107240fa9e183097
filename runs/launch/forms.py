from __future__ import annotations

import re

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from agentlab import localmodel
from runs.agent.faults import FaultError, FaultRates
from runs.core.anchor_names import ANCHOR_LABELS
from runs.core.error_text import FAULT, LABEL, translated
from runs.core.form_fields import MODEL_CHOICES, MODES_OF_PROVIDER, cost_budget_field, label_filter_fields
from runs.core.models import Policy, Run, Task
from runs.date_filters import FilterDateField
from runs.launch.selectors import POLICY_OFF, RunFilters
from tracing.core.anchoring import PATTERNS
from tracing.core.label_limits import MAX_SESSION_CHARS, MAX_TAGS, LabelError, clean_labels, parse_tag_text


def local_model_unusable() -> str:
    """Why a run on the local model would end in `error` now ("cannot reach the
    model endpoint"), while `make demo` still builds or starts it (issue 30,
    item 2); "" when it is ready, or run elsewhere (no state file to say)."""
    state = localmodel.status()
    if state.state == localmodel.BUILDING:
        done = re.match(r"\d+%", state.progress or "")
        if done:
            return _("The local model is still building, %(progress)s — use sim meanwhile.") % {"progress": done.group()}
        return _("The local model is still building, just started — use sim meanwhile.")
    if state.state == localmodel.STARTING:
        return _("The local model is still starting — use sim meanwhile.")
    if state.state == localmodel.FAILED:
        return _("The local model failed (%(detail)s) — use sim, or see %(log)s.") % {
            "detail": state.detail, "log": state.log or _("its log")}
    return ""


class NewRunForm(forms.Form):
    task = forms.ModelChoiceField(label=_("Task"), queryset=Task.objects.all(), required=False, to_field_name="slug",
                                  empty_label=_("— free prompt —"))
    prompt = forms.CharField(label=_("Prompt"), widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=4000,
                             help_text=_("Used when no task is picked."))
    provider = forms.ChoiceField(choices=MODEL_CHOICES, initial="sim", label=_("Model"))
    model_name = forms.CharField(label=_("Model name"), max_length=120, required=False, help_text=_("Model name for an OpenAI-compatible endpoint."))
    mode = forms.ChoiceField(label=_("Mode"), choices=Run.Mode.choices, initial=Run.Mode.TOOLS,
                             help_text=_("tools: native tool calls; text: Thought / Action lines parsed from the "
                                       "completion (the local model knows only text)."))
    temperature = forms.FloatField(label=_("Temperature"), min_value=0.0, max_value=2.0, initial=0.7)
    max_steps = forms.IntegerField(label=_("Max steps"), min_value=1, max_value=200, initial=15, help_text=_("Model turns, 1–200."))
    max_tokens = forms.IntegerField(label=_("Max tokens"), min_value=100, max_value=1_000_000, initial=20_000)
    max_cost = cost_budget_field()
    reruns = forms.IntegerField(label=_("Reruns"), min_value=1, max_value=50, initial=1, help_text=_("1–50 runs of the same prompt."))
    seed = forms.IntegerField(label=_("Seed"), required=False, min_value=0, max_value=2**31 - 1)
    tags = forms.CharField(label=_("Tags"), required=False, max_length=10_000, help_text=format_lazy(_("comma-separated; at most {n}"), n=MAX_TAGS))
    session_id = forms.CharField(required=False, max_length=MAX_SESSION_CHARS, label=_("session"),
                                 help_text=_("runs sharing it are listed together"))
    policy = forms.ModelChoiceField(label=_("Policy"), queryset=Policy.objects.none(), required=False, empty_label=_("off — no watchdog"),
                                    help_text=_("Watchdog policy (latest version of each)."))
    # Fault injection: share of tool calls that fail this way (0–1 each).
    fault_timeout = forms.FloatField(required=False, min_value=0, max_value=1, label=_("timeouts"))
    fault_http500 = forms.FloatField(required=False, min_value=0, max_value=1, label=_("HTTP 500s"))
    fault_empty = forms.FloatField(required=False, min_value=0, max_value=1, label=_("empty results"))
    fault_junk = forms.FloatField(required=False, min_value=0, max_value=1, label=_("HTML junk"))
    # Simulated-model behaviour knobs (probabilities); blank = drawn from the seed.
    sim_forget = forms.FloatField(required=False, min_value=0, max_value=1, label=_("forgets last observation"))
    sim_rephrase = forms.FloatField(required=False, min_value=0, max_value=1, label=_("rephrases in circles"))
    sim_wrong_premise = forms.FloatField(required=False, min_value=0, max_value=1, label=_("adopts a wrong premise"))
    sim_early_finish = forms.FloatField(required=False, min_value=0, max_value=1, label=_("finishes too early"))
    sim_ignore_hint = forms.FloatField(required=False, min_value=0, max_value=1, label=_("ignores hints"))
    sim_latency_ms = forms.IntegerField(required=False, min_value=0, max_value=10_000, initial=300,
                                        label=_("think time (ms)"), help_text=_("per model call, so you can watch it"))

    SIM_KNOBS = ("forget", "rephrase", "wrong_premise", "early_finish", "ignore_hint")
    FAULTS = ("timeout", "http500", "empty", "junk")

    def __init__(self, *args, project_id: int | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task"].queryset = Task.objects.for_project(project_id)
        policies = Policy.objects.for_project(project_id).latest_versions()
        self.fields["policy"].queryset = policies
        if not self.is_bound and "policy" not in self.initial:
            self.initial["policy"] = policies.filter(name="default").first()

    def clean(self):
        data = super().clean()
        if not data.get("task") and not (data.get("prompt") or "").strip():
            self.add_error("prompt", _("Pick a task or type a prompt."))
        provider = data.get("provider")
        if provider in MODES_OF_PROVIDER:
            # A model that works in one mode only gets it, whatever the form said
            # (the page's script picks it too; without it the choice is still right).
            data["mode"] = MODES_OF_PROVIDER[provider][0]
        if provider == "local" and (why := local_model_unusable()):
            self.add_error("provider", why)
        if provider == "openai" and not (data.get("model_name") or "").strip():
            self.add_error("model_name", _("Name the model to call on the OpenAI-compatible endpoint."))
        try:
            FaultRates.from_dict(self.faults())
        except FaultError as exc:
            self.add_error(None, translated(str(exc), FAULT))
        try:
            data["labels"] = clean_labels(tags=parse_tag_text(data.get("tags") or ""),
                                          session_id=data.get("session_id"))
        except LabelError as exc:
            self.add_error("session_id" if str(exc).startswith("session") else "tags", translated(str(exc), LABEL))
        return data

    def faults(self) -> dict:
        rates = {k: self.cleaned_data.get(f"fault_{k}") for k in self.FAULTS}
        return {k: v for k, v in rates.items() if v}

    def sim_settings(self) -> dict:
        knobs = {k: self.cleaned_data.get(f"sim_{k}") for k in (*self.SIM_KNOBS, "latency_ms")}
        return {k: v for k, v in knobs.items() if v is not None}


# Statuses before outcome and status were two things: a shared link with one
# still works, as `finished` with the outcome it meant.
LEGACY_STATUSES = {"succeeded": "correct", "failed": "wrong"}


class RunFilterForm(forms.Form):
    # The search box (runs.search): an id, or any text of the run's steps.
    q = forms.CharField(label=_("Q"), required=False, max_length=500, strip=True)
    # "text": search the steps even when q is also an id.
    within = forms.ChoiceField(label=_("Within"), choices=[("", _("ids and text")), ("text", _("text only"))], required=False)
    status = forms.ChoiceField(label=_("Status"), choices=[("", _("any status")), *Run.Status.choices], required=False)
    task = forms.CharField(label=_("Task"), required=False, max_length=80)
    model = forms.CharField(label=_("Model"), required=False, max_length=120)
    mode = forms.ChoiceField(label=_("Mode"), choices=[("", _("any mode")), *Run.Mode.choices], required=False)
    intervened = forms.ChoiceField(label=_("Intervened"), choices=[("", _("any interventions")), ("yes", _("had an intervention")),
                                            ("no", _("no intervention"))],
                                   required=False)
    detector = forms.CharField(label=_("Detector"), required=False, max_length=40)
    tier = forms.ChoiceField(label=_("Tier"), choices=[("", _("any tier")), ("hint", _("hint")), ("redirect", _("redirect")), ("stop", _("stop"))],
                             required=False)
    policy = forms.CharField(label=_("Policy"), required=False, max_length=80, help_text=format_lazy(_("a policy name, or '{off}'"), off=POLICY_OFF))
    steps_min = forms.IntegerField(label=_("Steps min"), required=False, min_value=0)
    steps_max = forms.IntegerField(label=_("Steps max"), required=False, min_value=0)
    outcome = forms.ChoiceField(label=_("Outcome"), choices=[("", _("any outcome")), ("correct", _("correct")), ("wrong", _("wrong")),
                                         ("unscored", _("unscored"))], required=False)
    stopped_by = forms.ChoiceField(label=_("Stopped by"), choices=[("", _("any end")), ("max_steps", _("max steps")), ("token_budget", _("token budget")),
                                            ("cost_budget", _("cost budget")), ("wall_time", _("wall time")),
                                            ("watchdog", _("watchdog")), ("user", _("user")),
                                            ("unfinished", _("unfinished (imported)"))], required=False)
    anchor = forms.ChoiceField(label=_("Anchor"), choices=[("", _("any anchoring")), ("broken", _("lost its anchor")), ("kept", _("no anchor break")),
                                        *[(p, format_lazy(_("lost it: {}"), ANCHOR_LABELS.get(p, p))) for p in PATTERNS]], required=False)
    forks = forms.ChoiceField(label=_("Forks"), choices=[("", _("forks too")), ("no", _("no forks")), ("only", _("forks only"))], required=False)
    since = FilterDateField()
    evaluation = forms.IntegerField(label=_("Evaluation"), required=False, min_value=1, widget=forms.HiddenInput)
    strategy = forms.CharField(label=_("Strategy"), required=False, max_length=20, widget=forms.HiddenInput)
    until = FilterDateField()
    tag, meta, session = label_filter_fields()
    before = forms.CharField(label=_("Before"), required=False, max_length=80)
    sort = forms.ChoiceField(label=_("Sort"), choices=[(k, k) for k in ("-created", "created", "-steps", "steps", "-tokens", "tokens")],
                             required=False)

    # What a screen reader says for each select (whose empty choice also names it: "any tier").
    LABELS = {"status": _("status"), "mode": _("mode"), "intervened": _("interventions"),
              "tier": _("intervention tier"), "anchor": _("anchoring"), "outcome": _("outcome"),
              "stopped_by": _("how the run ended"), "forks": _("forks"), "steps_min": _("at least this many steps"),
              "steps_max": _("at most this many steps"), "since": _("created since"), "until": _("created until")}

    def __init__(self, data=None, *args, **kwargs):
        if data is not None and data.get("status") in LEGACY_STATUSES:
            data = data.copy()
            data["outcome"] = data.get("outcome") or LEGACY_STATUSES[data["status"]]
            data["status"] = Run.Status.FINISHED
        super().__init__(data, *args, **kwargs)
        for name, label in self.LABELS.items():
            self.fields[name].widget.attrs["aria-label"] = label
        self.fields["steps_min"].widget.attrs["placeholder"] = _("min")
        self.fields["steps_max"].widget.attrs["placeholder"] = _("max")

    def filters(self) -> RunFilters:
        return RunFilters.of(self.cleaned_data)
