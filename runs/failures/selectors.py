"""The failed runs and their layers, counted in the database (no run is loaded
to count it)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet

from runs.core.models import Run
from runs.failures.models import LayerLabel
from tracing.core.attribution import LAYERS


def failed(runs: QuerySet[Run]) -> QuerySet[Run]:
    return runs.filter(status=Run.Status.FINISHED, success=False)


@dataclass(frozen=True)
class LayerRow:
    key: str
    name: str
    description: str
    guessed: int  # failed runs the guesser put here
    labelled: int  # runs reviewers put here
    confirmed: int  # reviewers put here and the guess had too


@dataclass(frozen=True)
class Breakdown:
    rows: list[LayerRow]
    failed: int
    unguessed: int  # failed runs with no guess (analysed before attribution, or nothing to go on)
    labelled: int
    agreed: int

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.labelled if self.labelled else None


def breakdown(runs: QuerySet[Run], guesses: dict[str | None, int] | None = None) -> Breakdown:
    """Failures of these runs by layer: the guess, the reviewers' labels, and
    how often they agree. Two queries, whatever the number of runs; one when
    the failed runs per guessed layer are given (the dashboard's rollups)."""
    fails = failed(runs)
    if guesses is None:
        guesses = dict(fails.values_list("attribution__layer").annotate(n=Count("pk"))
                       .values_list("attribution__layer", "n"))
    labels = LayerLabel.objects.filter(run__in=fails).values("layer").annotate(
        n=Count("pk"), agreed=Count("pk", filter=Q(layer=F("guessed"))))
    by_label = {row["layer"]: row for row in labels}
    rows = [LayerRow(layer.key, layer.name, layer.description, guesses.get(layer.key, 0),
                     by_label.get(layer.key, {}).get("n", 0), by_label.get(layer.key, {}).get("agreed", 0))
            for layer in LAYERS]
    total = sum(guesses.values())
    return Breakdown(rows=rows, failed=total, unguessed=guesses.get(None, 0),
                     labelled=sum(r.labelled for r in rows), agreed=sum(r.confirmed for r in rows))
