from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.agent.strategies import REACT, STRATEGIES
from runs.core.form_fields import MODEL_CHOICES, MODES_OF_PROVIDER, cost_budget_field
from runs.core.models import Policy, Run, Task
from runs.core.terms import TERMS
from runs.evaluations.services import EvaluationSpec

# An evaluation is launched as one batch: more runs than this is a job for
# several evaluations (or for the command line, which has no such cap).
MAX_RUNS = 2000


class EvaluationForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200, required=False)
    tasks = forms.ModelMultipleChoiceField(label=_("Tasks"), queryset=Task.objects.all(), to_field_name="slug", required=False,
                                           widget=forms.CheckboxSelectMultiple)
    all_tasks = forms.BooleanField(required=False, label=_("every task"), help_text=_("all tasks, ticked or not"))
    strategies = forms.MultipleChoiceField(label=_("Strategies"), choices=[(k, TERMS.get(k, v)) for k, v in STRATEGIES.items()], required=False,
                                           widget=forms.CheckboxSelectMultiple)
    provider = forms.ChoiceField(choices=MODEL_CHOICES, initial="sim", label=_("Model"))
    model_name = forms.CharField(label=_("Model name"), max_length=120, required=False)
    mode = forms.ChoiceField(label=_("Mode"), choices=Run.Mode.choices, initial=Run.Mode.TOOLS)
    temperature = forms.FloatField(label=_("Temperature"), min_value=0.0, max_value=2.0, initial=0.0)
    reruns = forms.IntegerField(label=_("Reruns"), min_value=1, max_value=50, initial=5, help_text=_("runs per task and strategy (k)"))
    # The one budget every strategy gets. Zero is refused by the field (min 1;
    # the cost's min is a hundredth of a cent, blank for no cost limit).
    max_steps = forms.IntegerField(label=_("Max steps"), min_value=1, max_value=200, initial=10, help_text=_("model turns and scripted calls"))
    max_tokens = forms.IntegerField(label=_("Max tokens"), min_value=1, max_value=1_000_000, initial=20_000)
    max_seconds = forms.IntegerField(min_value=1, max_value=3600, initial=120, label=_("max wall time (s)"))
    max_cost = cost_budget_field()
    policy = forms.ModelChoiceField(label=_("Policy"), queryset=Policy.objects.none(), required=False, empty_label=_("— none —"),
                                    help_text=_("the watchdog of the ReAct strategy"))
    seed = forms.IntegerField(label=_("Seed"), required=False, min_value=0, max_value=2**30)

    def __init__(self, *args, tasks=None, policies=None, **kwargs):
        # The current project's tasks and policies (runs.core.access); all of them for the command line.
        super().__init__(*args, **kwargs)
        self.task_choices = tasks if tasks is not None else Task.objects.all()
        policies = policies if policies is not None else Policy.objects.all()
        self.fields["tasks"].queryset = self.task_choices
        self.fields["policy"].queryset = policies.latest_versions()
        if not self.is_bound:
            self.initial.setdefault("policy", policies.latest_versions().filter(name="default").first())
            self.initial.setdefault("strategies", [s for s in STRATEGIES if s != "react_off"])

    def clean(self):
        data = super().clean()
        if data.get("all_tasks"):
            data["tasks"] = list(self.task_choices)
        if not data.get("tasks"):
            self.add_error("tasks", _("Pick at least one task."))
        if not data.get("strategies") and "strategies" not in self.errors:
            self.add_error("strategies", _("Pick at least one strategy."))
        if REACT in (data.get("strategies") or []) and not data.get("policy"):
            self.add_error("policy", _("ReAct with the watchdog needs a policy (or pick 'ReAct, watchdog off')."))
        provider = data.get("provider")
        if provider in MODES_OF_PROVIDER:
            data["mode"] = MODES_OF_PROVIDER[provider][0]
        if provider == "openai" and not (data.get("model_name") or "").strip():
            self.add_error("model_name", _("Name the model to call on the OpenAI-compatible endpoint."))
        tasks, strategies, reruns = data.get("tasks") or [], data.get("strategies") or [], data.get("reruns") or 0
        if len(tasks) * len(strategies) * reruns > MAX_RUNS:
            self.add_error(None, _("That is %(n)d runs; at most %(max)d a time.")
                           % {"n": len(tasks) * len(strategies) * reruns, "max": MAX_RUNS})
        return data

    def spec(self) -> EvaluationSpec:
        d = self.cleaned_data
        provider = d["provider"]
        model_name = {"sim": "sim", "local": ""}.get(provider, d.get("model_name") or "")
        return EvaluationSpec(
            tasks=list(d["tasks"]), strategies=d["strategies"], reruns=d["reruns"], provider=provider,
            model_name=model_name or "gemma-3-270m", mode=d["mode"], temperature=d["temperature"],
            max_steps=d["max_steps"], max_tokens=d["max_tokens"], max_seconds=d["max_seconds"],
            max_cost=d.get("max_cost"), policy=d.get("policy"), seed=d.get("seed"), name=d.get("name") or "",
        )
