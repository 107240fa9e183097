"""The compare page's reads: the selection and every selected run's steps,
in a constant number of queries whatever the number of runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Left

from runs.core.models import Run
from tracing.core.alignment import MAX_RUNS
from tracing.store.models import Step

# Grid cells show an action's label only; the full text arrives with the htmx
# expansion. Text matters to the alignment only for actions without arguments
# (text mode) and finals, whose first few hundred characters are enough, and
# capping it keeps 50 x 200 observations from hauling megabytes out of Postgres.
GRID_TEXT_CHARS = 300
ID = re.compile(r"\d{1,18}")


class SelectionError(Exception):
    """A selection the page refuses; the message is shown to the user as is."""


@dataclass(slots=True)
class GridStep:
    """The columns of a step the grid needs (duck-typed for tracing.core.alignment)."""

    index: int
    kind: str
    text: str
    tool: str
    args: Any
    status: str | None  # observation status (meta.status)
    tier: str | None  # intervention tier (meta.tier)


def parse_run_ids(values: list[str]) -> list[int]:
    """Run ids from ``runs=1,2,3`` and/or repeated ``runs=`` params, in order, deduplicated.

    Raises SelectionError for a non-numeric id, an empty selection or more than MAX_RUNS.
    """
    ids: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not ID.fullmatch(part):
                raise SelectionError(f"'{part[:40]}' is not a run id: use numbers, e.g. ?runs=1,2,3.")
            ids.append(int(part))
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise SelectionError("No runs selected: tick runs on the run list, or use ?runs=1,2,3.")
    if len(ids) > MAX_RUNS:
        raise SelectionError(
            f"At most {MAX_RUNS} runs can be compared at once; this selection has {len(ids)}. "
            "Narrow it (filter the run list by task or model) and compare again."
        )
    return ids


def runs_by_id(visible: QuerySet[Run], ids: list[int]) -> list[Run]:
    """The runs of `ids` among `visible`, in the order asked; SelectionError names the missing."""
    found = {r.pk: r for r in visible.select_related("task", "policy").filter(pk__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        shown = ", ".join(str(i) for i in missing[:10])
        raise SelectionError(f"No such run: {shown}. Pick runs from the run list.")
    return [found[i] for i in ids]


def grid_steps(run_ids: list[int]) -> dict[int, list[GridStep]]:
    """Every selected run's steps in one query, text capped at GRID_TEXT_CHARS."""
    by_run: dict[int, list[GridStep]] = {pk: [] for pk in run_ids}
    rows = (
        Step.objects.filter(run_id__in=run_ids)
        .order_by("run_id", "index")
        .annotate(head=Left("text", GRID_TEXT_CHARS), status=KeyTextTransform("status", "meta"),
                  tier=KeyTextTransform("tier", "meta"))
        .values_list("run_id", "index", "kind", "head", "tool", "args", "status", "tier")
    )
    for run_id, index, kind, head, tool, args, status, tier in rows:
        by_run[run_id].append(GridStep(index, kind, head, tool, args, status, tier))
    return by_run
