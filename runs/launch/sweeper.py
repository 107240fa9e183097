"""Every Celery worker sweeps, so no one process is the reconciler (issue 28).

Beat's tick on the control queue used to be the only sweep: with the control
worker and beat gone, a run whose worker died stayed `running` for good. Now
each worker's main process (not its pool children) runs a small daemon
thread that, every RECONCILE_INTERVAL_S, tries the sweep's advisory lock
(sweep_locked, below): whoever gets it sweeps, the others skip. The lock is
a session lock: a sweeper killed mid-sweep loses its connection and the
lock with it.
A sweep someone finished less than half an interval ago is not repeated, so
ten workers still sweep about once per interval, not ten times.

A thread rather than a task: a task waits behind long runs in the worker's
own queue, and a thread needs no broker either (a sweep resends what Redis
lost). Beat's task stays: it is one more sweeper, under the same lock.

Each tick also builds the search column of steps written since the last one
(tracing.store.step_indexer, under a lock of its own), so a step is indexed
within seconds of being written by whoever wrote it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from runs.health.models import SweepMark
from runs.health.sweeps import MARK, last_sweep_age_s
from runs.launch.reconcile import Sweep, runs_reconcile
from tracing.store.step_indexer import index_pending_steps

log = logging.getLogger(__name__)

# Advisory lock key of the sweep (any 64-bit number no other lock uses: run
# leases lock on run ids, which are far below it).
SWEEP_LOCK_KEY = 0x7265636F6E63  # "reconc"


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


def _guarded(what: str, work) -> None:
    try:
        work()
    except DatabaseError as exc:  # Postgres away: the next tick tries again
        log.warning("%s skipped: %s", what, str(exc).strip()[:200])
    except Exception:  # a bug must not end the thread: sweeping is what keeps runs ending
        log.exception("%s failed", what)


class Sweeper:
    """The worker's sweeping thread: start() when the worker is ready, stop() when it shuts down."""

    def __init__(self, send, interval_s: float | None = None) -> None:
        self.send = send
        self.interval_s = settings.RECONCILE_INTERVAL_S if interval_s is None else interval_s
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="agentlab-sweeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(10)

    def sweep_once(self) -> None:
        try:
            _guarded("sweep", lambda: sweep_locked(send=self.send, unless_within_s=self.interval_s / 2))
            # Every tick, not only when this worker swept: the indexer has its
            # own lock, and steps written since the last tick wait for it.
            _guarded("step indexing", index_pending_steps)
        finally:
            # A fresh connection each tick: one broken by an outage is never reused,
            # and an idle worker holds no connection between sweeps.
            with contextlib.suppress(DatabaseError):
                connection.close()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            # The first at once: the worker starting may be the one coming back after a kill.
            self.sweep_once()
            self._stopped.wait(self.interval_s)
