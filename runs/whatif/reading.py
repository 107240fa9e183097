"""A what-if result in words: which way the swept field turns the watchdog,
and why figures that seem to go the wrong way (a higher threshold catching
more) can be right. Pure: rows in, sentences out."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from runs.policies.fields import field_doc
from runs.whatif.sweep import MATCH_WINDOW

# Figures read for "backwards" moves.
MOVES = ("interrupted", "stopped")


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    try:
        return sorted(rows, key=lambda r: float(r["value"]))
    except (TypeError, ValueError):
        return rows


def _runs(n: int) -> str:
    return ngettext("%(n)d run", "%(n)d runs", n) % {"n": n}


def backwards(rows: list[dict[str, Any]], stricter: int) -> list[tuple[str, dict, dict]]:
    """(figure, lower row, higher row) where the figure moved against the
    field's direction: up as a more patient value rose, down as a stricter one did."""
    out = []
    ordered = _sorted(rows)
    for low, high in zip(ordered, ordered[1:], strict=False):
        for figure in MOVES:
            delta = high[figure] - low[figure]
            if delta * stricter < 0:
                out.append((figure, low, high))
    return out


def reading(sweep_path: str, rows: list[dict[str, Any]]) -> list[str]:
    """Sentences for the what-if page, most useful first."""
    if not rows:
        return []
    notes = []
    doc = field_doc(sweep_path) if sweep_path else None
    if doc is not None and doc.stricter:
        sentence = (_("A higher %(field)s (%(label)s) makes the watchdog more eager: %(help)s") if doc.stricter > 0
                    else _("A higher %(field)s (%(label)s) makes the watchdog more patient: %(help)s"))
        notes.append(sentence % {"field": sweep_path, "label": doc.label, "help": doc.help})
    if len(rows) > 1 and all(
        {k: r[k] for k in ("interrupted", "stopped", "justified_caught", "wrongly_spared")}
        == {k: rows[0][k] for k in ("interrupted", "stopped", "justified_caught", "wrongly_spared")}
        for r in rows
    ):
        notes.append(_(
            "Every value gives the same figures: over these %(runs)s, %(field)s never decided an intervention. The "
            "interventions there are (if any) came from other detectors or rules, and no run got near this threshold; "
            "try a wider range of values or other runs.") % {"runs": _runs(rows[0]["runs"]), "field": sweep_path})
    elif doc is not None and doc.stricter:
        for figure, low, high in backwards(rows, doc.stricter)[:3]:
            moved = (_("At %(field)s = %(high)s the replay interrupts %(runs)s against %(low_n)s at %(low)s")
                     if figure == "interrupted" else
                     _("At %(field)s = %(high)s the replay stops %(runs)s against %(low_n)s at %(low)s"))
            should = (_(", although a higher value should make it less eager.") if doc.stricter < 0
                      else _(", although a higher value should make it more eager."))
            notes.append(
                moved % {"field": sweep_path, "high": high["value"], "runs": _runs(high[figure]),
                         "low_n": low[figure], "low": low["value"]} + should + " " + _(
                    "This is not a mistake in the replay: the watchdog climbs a ladder (hint, redirect, stop) with a "
                    "cooldown between rungs, so moving one threshold moves when every later intervention comes. An "
                    "earlier stop ends a run's replay and removes the interventions that would have followed; a later "
                    "first hint can put the stop's own conditions in reach within the run.")
            )
    labelled = sum(r["justified_total"] + r["wrongly_total"] for r in rows[:1])
    if not labelled:
        notes.append(_("No interruption in these runs has a reviewer's label: 'justified still caught' and 'wrongly "
                       "killed spared' stay 0 / 0 until some are labelled in the review queue."))
    else:
        notes.append(_("An interruption a reviewer labelled counts as caught when the replayed policy intervenes "
                       "within %(window)s steps of it: a stricter policy that fires earlier than that may show as "
                       "catching less, though it acted sooner.") % {"window": MATCH_WINDOW})
    return notes
