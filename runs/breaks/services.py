"""The writes of break calibration: a reviewer's verdict on a run's shown break,
the project's rule, an admin's override; and, when a pattern's state changes,
the re-analysis of the project's runs it changes (issue 26, item 3).

A pattern's state is decided under a lock on its PatternState row, so two
reviewers labelling at once are counted together and at most one of them
sends the re-analysis. The re-analysis runs in a Celery task after the commit
(runs.core.queue.enqueue); BREAKS_REANALYSE_INLINE runs it in the request (tests, a
deployment without workers).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from runs.breaks import rule
from runs.breaks.models import BreakLabel, BreakSettings, PatternState
from runs.breaks.reanalysis import breaks_reanalyse
from runs.breaks.selectors import settings_of, tallies
from runs.breaks.tasks import reanalyse_pattern
from runs.core.models import Run
from runs.core.queue import QueueUnavailable, enqueue
from tracing.core.anchoring import PATTERNS

log = logging.getLogger(__name__)

# A note is a sentence or two; a pasted trajectory belongs in the run.
NOTE_MAX_CHARS = 4000


class BreakError(ValueError):
    """Bad input to a break service (shown to the user as a 400 naming the field)."""


def break_label(*, run: Run, reviewer, verdict: str, note: str = "", step: int | None = None) -> BreakLabel:
    """Record ``reviewer``'s verdict on the run's shown break; labelling the same
    step again updates the label. ``step``: the step the reviewer saw (a run
    re-analysed since shows another one, and the label would judge it blind).
    Then re-decide the pattern's state in the project."""
    if verdict not in rule.VERDICTS:
        raise BreakError(f"verdict must be one of {', '.join(rule.VERDICTS)}; got {verdict[:40]!r}")
    note = (note or "").strip()
    if len(note) > NOTE_MAX_CHARS:
        raise BreakError(f"note: longer than {NOTE_MAX_CHARS} characters")
    if "\x00" in note:
        raise BreakError("note: contains a NUL character, which cannot be stored")
    shown = run.first_anchor_break
    pattern = str((run.anchor_evidence or {}).get("pattern") or "")
    if shown is None or not pattern:
        raise BreakError(f"run {run.pk} has no shown break to judge (no strong break, or its pattern is demoted "
                         "in this project); its findings are not labelled here")
    if step is not None and step != shown:
        raise BreakError(f"step: the run's shown break is now step {shown}, not step {step} (it was re-analysed); "
                         "reload the run page")
    with transaction.atomic():
        label, created = BreakLabel.objects.get_or_create(
            run=run, reviewer=reviewer, step=shown,
            defaults={"project_id": run.project_id, "pattern": pattern, "verdict": verdict, "note": note})
        before = label.pattern
        if not created and (label.verdict, label.note, label.pattern) != (verdict, note, pattern):
            label.verdict, label.note, label.pattern, label.updated_at = verdict, note, pattern, timezone.now()
            label.save(update_fields=["verdict", "note", "pattern", "updated_at"])
        # A step re-labelled after a re-analysis showed another pattern there
        # moves its verdict from one pattern's tally to the other's.
        patterns_decide(project_id=run.project_id, patterns=[pattern, before])
    return label


def _state_locked(project_id: int, pattern: str) -> PatternState:
    PatternState.objects.get_or_create(project_id=project_id, pattern=pattern)
    return PatternState.objects.select_for_update().get(project_id=project_id, pattern=pattern)


def patterns_decide(*, project_id: int, patterns: Sequence[str], user=None) -> list[str]:
    """Apply the rule (and each override) to these patterns of the project; the
    patterns whose state changed get their runs re-analysed. Returns them."""
    changed = []
    with transaction.atomic():
        states = [_state_locked(project_id, p) for p in sorted(set(patterns))]
        conf = settings_of(project_id)
        marks = tallies(project_id, [s.pattern for s in states])
        for state in states:
            demoted = rule.is_demoted(marks.get(state.pattern, rule.Tally()), state.override, floor=conf.floor,
                                      min_labels=conf.min_labels)
            if demoted != state.demoted:
                PatternState.objects.filter(pk=state.pk).update(demoted=demoted, changed_at=timezone.now(),
                                                                changed_by=user)
                changed.append(state.pattern)
                _reanalyse_after_commit(project_id, state.pattern)
    return changed


def pattern_override(*, project_id: int, pattern: str, override: str, user) -> list[str]:
    """An admin's word on a pattern: keep it shown, demote it, or back to the rule."""
    if pattern not in PATTERNS:
        raise BreakError(f"pattern: {pattern[:40]!r} is not a break pattern")
    if override not in rule.OVERRIDES:
        raise BreakError(f"override must be one of {', '.join(repr(o) for o in rule.OVERRIDES)}; got {override[:40]!r}")
    with transaction.atomic():
        state = _state_locked(project_id, pattern)
        PatternState.objects.filter(pk=state.pk).update(override=override, changed_by=user)
        return patterns_decide(project_id=project_id, patterns=[pattern], user=user)


def break_settings_set(*, project_id: int, floor: float, min_labels: int, user=None) -> list[str]:
    """Change the project's rule and re-decide every pattern it has a state or labels for."""
    if not 0 <= floor <= 1:
        raise BreakError(f"floor must be between 0 and 1; got {floor}")
    if min_labels < 1:
        raise BreakError(f"min_labels must be at least 1; got {min_labels}")
    with transaction.atomic():
        BreakSettings.objects.update_or_create(project_id=project_id,
                                               defaults={"floor": floor, "min_labels": min_labels})
        known = set(PatternState.objects.filter(project_id=project_id).values_list("pattern", flat=True))
        known |= set(BreakLabel.objects.filter(project_id=project_id).values_list("pattern", flat=True).distinct())
        return patterns_decide(project_id=project_id, patterns=sorted(known), user=user)


# -- re-analysis ---------------------------------------------------------------


def _reanalyse_after_commit(project_id: int, pattern: str) -> None:
    if django_settings.BREAKS_REANALYSE_INLINE:
        transaction.on_commit(lambda: breaks_reanalyse(project_id, pattern))
        return

    def send() -> None:
        try:
            enqueue(reanalyse_pattern, project_id, pattern, undo=lambda: None)
        except QueueUnavailable:
            # The state is saved; the next analysis of each run (a run's end,
            # `manage.py analyse`) applies it.
            log.warning("re-analysis of %s in project %s not sent: the queue is down", pattern, project_id)

    transaction.on_commit(send)
