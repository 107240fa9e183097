"""Re-analysis of a project's runs after a pattern's state changed there (the
task's service: runs.breaks.tasks).

The judging itself is runs.lifecycle.runs_judge, handed in by runs.apps the
way launching is handed its approval gate: the lifecycle sits above the
features (it calls launching's analysis, reviews and evaluations, and launching
reads the demoted patterns here), so breaks does not import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db.models.fields.json import KeyTextTransform

from runs.breaks.models import PatternState
from runs.core.models import Run

# Runs re-analysed per batch (runs_analyse reads a batch's steps in one query).
REANALYSE_BATCH = 200

# Analyses, reviews and evaluates runs by id, returns how many (runs.lifecycle.runs_judge).
Judge = Callable[[Sequence[int]], int]
_judge: list[Judge] = []


def reanalysis_judge_use(judge: Judge) -> None:
    """Hand re-analysis the judge it runs runs through (runs.apps.ready)."""
    _judge[:] = [judge]


def affected_runs(project_id: int, pattern: str, *, demoted: bool) -> list[int]:
    """The runs of the project whose analysis a change of the pattern's state
    changes: when demoted, those whose shown break has it; when restored, those
    that hold it as a finding."""
    runs = Run.objects.filter(project_id=project_id).exclude(status__in=Run.LIVE_STATUSES)
    if demoted:
        runs = runs.alias(anchor_pattern=KeyTextTransform("pattern", "anchor_evidence")).filter(
            first_anchor_break__isnull=False, anchor_pattern=pattern)
    else:
        runs = runs.filter(anchor_findings__contains=[{"pattern": pattern}])
    return list(runs.order_by("pk").values_list("pk", flat=True))


def breaks_reanalyse(project_id: int, pattern: str) -> int:
    """Re-analyse the project's runs that the pattern's current state changes
    (the task's service). Idempotent: it reads the state when it runs, so a
    pattern demoted and restored before the worker got to it costs nothing
    wrong. Returns the number of runs analysed."""
    state = PatternState.objects.filter(project_id=project_id, pattern=pattern).first()
    ids = affected_runs(project_id, pattern, demoted=bool(state and state.demoted))
    done = 0
    if not _judge:
        raise RuntimeError("no judge handed in: runs.apps.ready hands it over")
    for start in range(0, len(ids), REANALYSE_BATCH):
        done += _judge[0](ids[start:start + REANALYSE_BATCH])
    return done
