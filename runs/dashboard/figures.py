"""Everything the dashboard shows and exports, from the per-day rollups when
they can answer the filters, else from the period's runs (the same figures,
slower: the page says which)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from runs.core.models import Run
from runs.dashboard import rollup_figures, selectors
from runs.failures.selectors import breakdown
from runs.launch.selectors import RunFilters

# What the page says under its figures, per source.
SOURCE_NOTES = {
    "rollups": gettext_lazy("From the daily rollups; P95 steps from their per-step-count buckets (one bucket per "
                            "count: exact)."),
    "runs": gettext_lazy("Read from the runs, not the daily rollups: they do not keep %(filters)s. Slower over long "
                         "periods."),
}
_FILTER_WORDS = {"tag": gettext_lazy("tags"), "meta": gettext_lazy("metadata"), "session": gettext_lazy("sessions")}


def page_figures(runs: QuerySet[Run], project_id: int | None, f: RunFilters, *,
                 from_rollups: bool | None = None) -> dict[str, Any]:
    """The page's data: `runs` are the user's runs narrowed by `f`. From the
    rollups when they serve `f` (or as `from_rollups` says: the test of
    equality reads both)."""
    use = rollup_figures.serves(f) if from_rollups is None else from_rollups
    if use:
        data = rollup_figures.figures(project_id, f)
        cost_rows, guesses = data.pop("cost_rows"), data.pop("layer_guesses")
        data["source"] = "rollups"
        data["source_note"] = str(SOURCE_NOTES["rollups"])
    else:
        data = {**selectors.aggregate(runs), **selectors.array_figures(runs), "by_tag": selectors.by_tag(runs)}
        cost_rows, guesses = selectors.cost_rows(runs), None
        data["source"] = "runs"
        filters = ", ".join(str(_FILTER_WORDS.get(name, name)) for name in rollup_figures.unserved(f))
        data["source_note"] = SOURCE_NOTES["runs"] % {"filters": filters or _("these filters")}
    # Reviewers' labels change apart from runs: read where they are (the label tables, a few rows per run).
    data["false_kills"] = selectors.false_kills(runs)
    data["breakdown"] = breakdown(runs, guesses)
    selectors.add_costs(data, selectors.costs(cost_rows))
    fk = data["false_kills"]
    labelled = sum(r["labelled"] for r in fk)
    data["totals"]["false_kill_rate"] = sum(r["wrongly"] for r in fk) / labelled if labelled else None
    data["totals"]["labelled"] = labelled
    return data
