"""A worker's hold on the run it executes, kept in Postgres (not in the broker).

The hold is a session advisory lock on a connection of the lease's own: it
lasts exactly as long as the worker's session, so a worker killed with -9 (or a
database restart) lets it go at once, without waiting for a broker's visibility
timeout. A heartbeat column, refreshed every RUN_HEARTBEAT_S, says when the
holder was last seen; the reconciler (runs.launch.reconcile) takes up a run
only when its lock is free *and* its heartbeat is stale, so a worker that is
reconnecting after a short outage gets its run back first.

Whoever takes a run over changes its `celery_id` while holding the lock. A
worker that lost its lock checks, after taking it again, that the run is still
`running` under its own id (the fence); if not, the run is someone else's and
the worker drops it (LeaseLost) without writing another step.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from runs.agent.tools import RunAborted
from runs.core.models import Run

log = logging.getLogger(__name__)

T = TypeVar("T")

# pg_try_advisory_lock(int, int): the first key names agentlab's run locks so
# they never collide with another application's advisory locks.
LOCK_NAMESPACE = 0x52554E  # "RUN"


def lock_key(run_id: int) -> tuple[int, int]:
    return LOCK_NAMESPACE, run_id % 2**31


class LeaseLost(RunAborted):
    """Another worker (or the reconciler) took the run over: stop, write nothing more."""


class DatabaseGone(RunAborted):
    """The database stayed unreachable for RUN_DB_PATIENCE_S: the run is left to the reconciler."""


def lock_for_transaction(run_id: int) -> bool:
    """Take the run's lock until the end of the current transaction (Django's
    connection, inside atomic()); False when a worker holds the run."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", lock_key(run_id))
        return bool(cur.fetchone()[0])


def _connect() -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"] or None, host=db["HOST"] or None,
        port=db["PORT"] or None, autocommit=True, connect_timeout=3,
        application_name=f"{db['OPTIONS'].get('application_name', 'agentlab')}-lease",
    )


class Lease:
    """The lock and heartbeat of one run, held by the worker executing it."""

    def __init__(self, run_id: int, task_id: str) -> None:
        self.run_id, self.task_id = run_id, task_id
        self.lost = False
        self._conn: psycopg.Connection | None = None
        self._mutex = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._table = Run._meta.db_table

    def acquire(self) -> bool:
        """Take the run's lock; False when another worker holds it."""
        self._conn = _connect()
        if self._lock(self._conn):
            return True
        self._close()
        return False

    def start_heartbeat(self) -> None:
        self._thread = threading.Thread(target=self._beat, name=f"lease-{self.run_id}", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._mutex:
            self._close()  # ending the session releases the lock

    def check(self) -> None:
        if self.lost:
            raise LeaseLost(f"run {self.run_id} was taken over by another worker")

    def verify(self) -> None:
        """After a database error: make sure the lock is still ours, taking it
        again on a new connection if the old one died. Raises LeaseLost when the
        run went to someone else, psycopg.OperationalError while the database
        is still unreachable."""
        with self._mutex:
            self.check()
            try:
                assert self._conn is not None
                self._conn.execute("SELECT 1")
                return
            except (psycopg.Error, AssertionError):
                self._close()
            conn = _connect()
            if not self._lock(conn) or not self._fenced(conn):
                conn.close()
                self.lost = True
                self.check()
            self._conn = conn

    def _lock(self, conn: psycopg.Connection) -> bool:
        return bool(conn.execute("SELECT pg_try_advisory_lock(%s, %s)", lock_key(self.run_id)).fetchone()[0])

    def _fenced(self, conn: psycopg.Connection) -> bool:
        row = conn.execute(f"SELECT 1 FROM {self._table} WHERE id = %s AND status = %s AND celery_id = %s",
                           (self.run_id, Run.Status.RUNNING, self.task_id)).fetchone()
        return row is not None

    def _beat(self) -> None:
        while not self._stopped.wait(settings.RUN_HEARTBEAT_S):
            try:
                self.verify()
                with self._mutex:
                    assert self._conn is not None
                    self._conn.execute(f"UPDATE {self._table} SET heartbeat_at = now() WHERE id = %s AND celery_id = %s",
                                       (self.run_id, self.task_id))
            except LeaseLost:
                log.warning("run %s: lease lost to another worker", self.run_id)
                return
            except (psycopg.Error, AssertionError) as exc:
                log.warning("run %s: heartbeat failed (%s); retrying", self.run_id, exc)

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def durable(self, call: Callable[..., T]) -> Callable[..., T]:
        """`call`, retried with backoff while the database is away (up to
        RUN_DB_PATIENCE_S), and only while the lease is still ours. A write
        that failed is simply written again: steps are keyed on (run, index)
        and the recorder's ON CONFLICT makes a write that did land a no-op, so
        nothing is lost or stored twice."""

        def wrapped(*args, **kwargs):
            deadline = time.monotonic() + settings.RUN_DB_PATIENCE_S
            delay = 0.25
            failed = False
            while True:
                self.check()
                try:
                    if failed:
                        # Never write again before the lock is ours again.
                        self.verify()
                    return call(*args, **kwargs)
                except (OperationalError, InterfaceError, psycopg.OperationalError) as exc:
                    error: Exception = exc
                failed = True
                # A new connection for the next try; Django opens it on demand.
                with contextlib.suppress(DatabaseError):
                    connection.close()
                if time.monotonic() + delay > deadline:
                    raise DatabaseGone(f"the database was unreachable for {settings.RUN_DB_PATIENCE_S:g} s: {error}")
                log.warning("run %s: database error (%s); retrying in %.2f s", self.run_id, error, delay)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

        return wrapped
