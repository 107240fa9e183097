"""The words a run's data is made of — statuses, step kinds, detectors, tiers,
observation classes — as the interface says them in the request's language.

Stored values stay English identifiers (filters, exports, the API use them);
only what a page shows goes through `term` (the `term` template filter). A
value not listed here is shown as stored.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

TERMS = {
    # Run and job statuses.
    "queued": pgettext_lazy("status", "queued"),
    "running": pgettext_lazy("status", "running"),
    "finished": pgettext_lazy("status", "finished"),
    "stopped": pgettext_lazy("status", "stopped"),
    "error": pgettext_lazy("status", "error"),
    "awaiting": pgettext_lazy("status", "awaiting"),
    "done": pgettext_lazy("status", "done"),
    "ok": pgettext_lazy("status", "ok"),
    # Step kinds and the timeline's labels (ReAct's names kept beside the Chinese).
    "thought": pgettext_lazy("step kind", "thought"),
    "action": pgettext_lazy("step kind", "action"),
    "observation": pgettext_lazy("step kind", "observation"),
    "final": pgettext_lazy("step kind", "final"),
    "intervention": pgettext_lazy("step kind", "intervention"),
    "reply": pgettext_lazy("step kind", "reply"),
    "user": pgettext_lazy("step kind", "user"),
    "system": pgettext_lazy("step kind", "system"),
    "watchdog": pgettext_lazy("step kind", "watchdog"),
    "assistant": pgettext_lazy("step kind", "assistant"),
    "tool": pgettext_lazy("step kind", "tool"),
    # Detectors.
    "repetition": pgettext_lazy("detector", "repetition"),
    "stagnation": pgettext_lazy("detector", "stagnation"),
    "drift": pgettext_lazy("detector", "drift"),
    "budget": pgettext_lazy("detector", "budget"),
    # Intervention tiers.
    "hint": pgettext_lazy("tier", "hint"),
    "redirect": pgettext_lazy("tier", "redirect"),
    "stop": pgettext_lazy("tier", "stop"),
    # Observation classes (tracing.core.watchdog) and result statuses.
    "injection": pgettext_lazy("observation class", "injection"),
    "junk": pgettext_lazy("observation class", "junk"),
    "empty": pgettext_lazy("observation class", "empty"),
    "timeout": pgettext_lazy("observation class", "timeout"),
    "no_new_info": pgettext_lazy("observation class", "no new info"),
    "dead loop": pgettext_lazy("observation class", "dead loop"),
    "repeated call": pgettext_lazy("observation class", "repeated call"),
    "truncated": pgettext_lazy("observation class", "truncated"),
    # Observation governance (tracing.core.governance): a result's class and trust level.
    "usable fact": pgettext_lazy("observation class", "usable fact"),
    "needs cross-check": pgettext_lazy("observation class", "needs cross-check"),
    "retryable error": pgettext_lazy("observation class", "retryable error"),
    "injection alert": pgettext_lazy("observation class", "injection alert"),
    "none": pgettext_lazy("trust", "none"),
    "low": pgettext_lazy("trust", "low"),
    "medium": pgettext_lazy("trust", "medium"),
    "high": pgettext_lazy("trust", "high"),
    "untrusted": pgettext_lazy("trust", "untrusted"),
    # Run modes.
    "tools": pgettext_lazy("mode", "tools"),
    "text": pgettext_lazy("mode", "text"),
    # How a run ended (stopped_by).
    "max_steps": pgettext_lazy("ended by", "max steps"),
    "token_budget": pgettext_lazy("ended by", "token budget"),
    "cost_budget": pgettext_lazy("ended by", "cost budget"),
    "wall_time": pgettext_lazy("ended by", "wall time"),
    # Failure layers (tracing.core.attribution; "observation" is the step kind's word above).
    "plan": pgettext_lazy("layer", "plan"),
    "parameters": pgettext_lazy("layer", "parameters"),
    "synthesis": pgettext_lazy("layer", "synthesis"),
    "termination": pgettext_lazy("layer", "termination"),
    # What runs are grouped and compared by (the dashboard's tables, compare's columns, the review figures).
    "task": pgettext_lazy("grouped by", "task"),
    "model": pgettext_lazy("grouped by", "model"),
    "policy": pgettext_lazy("grouped by", "policy"),
    "tag": pgettext_lazy("grouped by", "tag"),
    "tags": pgettext_lazy("grouped by", "tags"),
    "mode": pgettext_lazy("grouped by", "mode"),
    "provider": pgettext_lazy("grouped by", "provider"),
    "temperature": pgettext_lazy("grouped by", "temperature"),
    "detector": pgettext_lazy("grouped by", "detector"),
    "tier": pgettext_lazy("grouped by", "tier"),
    "threshold": pgettext_lazy("grouped by", "threshold"),
    # The local model's states (agentlab/localmodel.py).
    "building": pgettext_lazy("local model", "building"),
    "starting": pgettext_lazy("local model", "starting"),
    "ready": pgettext_lazy("local model", "ready"),
    "failed": pgettext_lazy("local model", "failed"),
    "off": pgettext_lazy("local model", "off"),
    "not running": pgettext_lazy("local model", "not running"),
    # Evaluation strategies (runs/agent/strategies.py, which stays free of Django).
    "no_tools": pgettext_lazy("strategy", "no tools (answer directly)"),
    "one_retrieval": pgettext_lazy("strategy", "one retrieval (search the task, answer)"),
    "fixed_workflow": pgettext_lazy("strategy", "fixed workflow (search → lookup → answer)"),
    "react": pgettext_lazy("strategy", "ReAct with the watchdog"),
    "react_off": pgettext_lazy("strategy", "ReAct, watchdog off"),
    # The kinds of evidence behind an anchor break (tracing/core/anchoring/strength.py).
    "answered before": pgettext_lazy("evidence", "answered before"),
    "argument nothing observed holds": pgettext_lazy("evidence", "argument nothing observed holds"),
    "call never made": pgettext_lazy("evidence", "call never made"),
    "contradicted by a later result": pgettext_lazy("evidence", "contradicted by a later result"),
    "contradicted by the record": pgettext_lazy("evidence", "contradicted by the record"),
    "contradicts its own conclusion": pgettext_lazy("evidence", "contradicts its own conclusion"),
    "failure read as success": pgettext_lazy("evidence", "failure read as success"),
    "not in the result it cites": pgettext_lazy("evidence", "not in the result it cites"),
    "nothing observed supports it": pgettext_lazy("evidence", "nothing observed supports it"),
    "other": pgettext_lazy("evidence", "other"),
    "repeated after rejection": pgettext_lazy("evidence", "repeated after rejection"),
    "result not used": pgettext_lazy("evidence", "result not used"),
    "state read or written again": pgettext_lazy("evidence", "state read or written again"),
    "taken from another relation": pgettext_lazy("evidence", "taken from another relation"),
    # The compare grid's last cell of a run.
    "(ended)": pgettext_lazy("compare cell", "(ended)"),
    "(no steps)": pgettext_lazy("compare cell", "(no steps)"),
}

# What each failure layer means (tracing.core.attribution.LAYERS' descriptions, in the page's language).
LAYER_DESCRIPTIONS = {
    "plan": _("Wrong decomposition or goal: the agent set out to do the wrong thing, dropped part of the task, or "
              "went round in circles instead of widening its search."),
    "parameters": _("Wrong tool or arguments: the intent was right, but the calls were invalid, malformed or did not "
                    "do what the agent meant, and it never got past them."),
    "observation": _("A result misread, overlooked, or trusted when it should not have been (success claimed after a "
                     "failure, an empty result taken as proof)."),
    "synthesis": _("The evidence was there and read, but the answer combined it wrongly."),
    "termination": _("Stopped too early (gave up, answered untested or from memory) or too late (ran out of steps)."),
}


def term(value) -> str:
    """`value` in the request's language, or as stored when it is not one of the terms."""
    if isinstance(value, (list, tuple)):  # a run's detectors, tiers: listed as words
        return ", ".join(term(v) for v in value)
    if not isinstance(value, str):
        return "" if value is None else str(value)
    found = TERMS.get(value)
    return str(found) if found is not None else value


def layer_description(key: str, default: str = "") -> str:
    found = LAYER_DESCRIPTIONS.get(key)
    return str(found) if found is not None else default
