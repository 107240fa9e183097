"""When the reconciler last swept (issue 28): each sweep (runs.launch.sweeper)
leaves its time in SweepMark; a last sweep older than STALE_SWEEP_S is shown
on the run list and in /metrics."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from runs.health.models import SweepMark

MARK = "reconciler"
# Past this, the run list says sweeps have stopped: six missed 5 s ticks, and
# a run left behind waits its RUN_STALE_S (9 s) plus this before anyone notices.
STALE_SWEEP_S = 30


def last_sweep_at() -> datetime | None:
    return SweepMark.objects.filter(name=MARK).values_list("at", flat=True).first()


def last_sweep_age_s(now: datetime | None = None) -> float | None:
    """Seconds since the last sweep ended (None: never swept)."""
    at = last_sweep_at()
    return None if at is None else ((now or timezone.now()) - at).total_seconds()


def stalled_age() -> int | None:
    """The run list's banner: seconds since the last sweep when older than
    STALE_SWEEP_S, else None (a database that never swept says nothing)."""
    age = last_sweep_age_s()
    return int(age) if age is not None and age > STALE_SWEEP_S else None


def sweeps_stalled() -> bool:
    return stalled_age() is not None
