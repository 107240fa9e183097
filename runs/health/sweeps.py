"""The reconciler's sweep under a Postgres advisory lock, so any number of sweepers is safe (issue 28).

With the lock, beat and the control worker need not be the only ones: a
second beat, or any worker (every worker sweeps on a thread of its own,
runs.health.sweeper), runs it when nobody else is sweeping and skips it when
someone is (one at a time, whoever holds it). The
lock is a session lock: a sweeper killed mid-sweep loses its connection and
the lock with it. Each sweep leaves its time in SweepMark; a last sweep older
than STALE_SWEEP_S is shown on the run list and in /metrics.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import datetime

from django.db import connection
from django.utils import timezone

from runs.health.models import SweepMark
from runs.launch.reconcile import Sweep, runs_reconcile

# Advisory lock key of the sweep (any 64-bit number no other lock uses: run
# leases lock on run ids, which are far below it).
SWEEP_LOCK_KEY = 0x7265636F6E63  # "reconc"
MARK = "reconciler"
# Past this, the run list says sweeps have stopped: six missed 5 s ticks, and
# a run left behind waits its RUN_STALE_S (9 s) plus this before anyone notices.
STALE_SWEEP_S = 30


def sweep_locked(*, send: Callable[[int, str], None], unless_within_s: float = 0.0) -> Sweep | None:
    """One sweep if no one else is sweeping (None when someone is), its time
    recorded. With `unless_within_s`, also None when a sweep ended less than
    that long ago (read under the lock, so two sweepers never both decide to)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [SWEEP_LOCK_KEY])
        if not cur.fetchone()[0]:
            return None
    try:
        if unless_within_s:
            age = last_sweep_age_s()
            if age is not None and age < unless_within_s:
                return None
        sweep = runs_reconcile(send=send)
        SweepMark.objects.update_or_create(name=MARK, defaults={
            "at": timezone.now(), "host": socket.gethostname()[:200], "resent": sweep.resent,
            "resumed": sweep.resumed, "ended": sweep.ended})
        return sweep
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s)", [SWEEP_LOCK_KEY])


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
