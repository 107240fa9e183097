"""The words a run's data is made of — statuses, step kinds, detectors, tiers,
observation classes — as the interface says them in the request's language.

Stored values stay English identifiers (filters, exports, the API use them);
only what a page shows goes through `term` (the `term` template filter). A
value not listed here is shown as stored.
"""

from __future__ import annotations

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
    # Detectors.
    "repetition": pgettext_lazy("detector", "repetition"),
    "stagnation": pgettext_lazy("detector", "stagnation"),
    "drift": pgettext_lazy("detector", "drift"),
    "budget": pgettext_lazy("detector", "budget"),
    # Intervention tiers.
    "hint": pgettext_lazy("tier", "hint"),
    "redirect": pgettext_lazy("tier", "redirect"),
    "stop": pgettext_lazy("tier", "stop"),
    # Observation classes (tracing.watchdog) and result statuses.
    "injection": pgettext_lazy("observation class", "injection"),
    "junk": pgettext_lazy("observation class", "junk"),
    "empty": pgettext_lazy("observation class", "empty"),
    "timeout": pgettext_lazy("observation class", "timeout"),
    "no_new_info": pgettext_lazy("observation class", "no new info"),
    "dead loop": pgettext_lazy("observation class", "dead loop"),
    "repeated call": pgettext_lazy("observation class", "repeated call"),
    "truncated": pgettext_lazy("observation class", "truncated"),
    # Run modes.
    "tools": pgettext_lazy("mode", "tools"),
    "text": pgettext_lazy("mode", "text"),
    # How a run ended (stopped_by).
    "max_steps": pgettext_lazy("ended by", "max steps"),
    "token_budget": pgettext_lazy("ended by", "token budget"),
    "cost_budget": pgettext_lazy("ended by", "cost budget"),
    "wall_time": pgettext_lazy("ended by", "wall time"),
}


def term(value) -> str:
    """`value` in the request's language, or as stored when it is not one of the terms."""
    if not isinstance(value, str):
        return "" if value is None else str(value)
    found = TERMS.get(value)
    return str(found) if found is not None else value
