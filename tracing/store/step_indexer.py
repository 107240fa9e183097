"""The search column built off the writers' hot path (issue 31).

Writers store a step with `search = NULL` (tokenising was 47-57% of a
recorded step and half of a COPY: bench/search.py); this fills it a few
seconds later. Every worker's sweeping thread calls it each tick
(runs.launch.sweeper: tracing never imports runs, so runs calls this), beat
too; an advisory lock of its own lets one of them index at a time and the
others skip. A tick indexes a bounded number of batches, so a bulk import
is caught up over a few ticks without one tick holding the lock for minutes.
Until a step is indexed, the search still finds it: the match falls back to
its raw text (tracing.store.step_queries.step_match_sql).
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection, transaction

from tracing.core.stepindex import BATCH, pending_sql, write_documents

# Advisory lock key of the indexer (apart from the reconciler's sweep lock and
# the run leases, which lock on run ids far below it).
STEP_INDEX_LOCK_KEY = 0x737465707378  # "stepsx"


def index_pending_steps(*, batches: int | None = None, batch: int = BATCH) -> int | None:
    """Index up to `batches` batches of unindexed steps, oldest first; the
    number indexed, or None when another process holds the indexer's lock."""
    batches = settings.STEP_INDEX_BATCHES_PER_TICK if batches is None else batches
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [STEP_INDEX_LOCK_KEY])
        if not cur.fetchone()[0]:
            return None
    try:
        done = 0
        last_id = 0
        sql = pending_sql(skip_locked=True)
        for _ in range(batches):
            with transaction.atomic(), connection.cursor() as cur:
                # The column is derived data: a crash that loses the last
                # batches only leaves them for the next tick.
                cur.execute("SET LOCAL synchronous_commit TO OFF")
                cur.execute(sql, [last_id, batch])
                rows = cur.fetchall()
                if not rows:
                    break
                write_documents(cur, rows)
            done += len(rows)
            last_id = rows[-1][0]
        return done
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s)", [STEP_INDEX_LOCK_KEY])
