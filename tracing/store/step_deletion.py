"""Deleting runs and everything recorded of them, in batches, each deletion recorded (issue 28).

A run's steps can be a million rows: one DELETE would hold their row locks
and a long transaction for as long as it takes. Steps go first, STEP_BATCH at
a time, each batch its own short transaction (a reader sees a run losing
steps, never a broken page: the run row, deleted last, is what the pages
find). Then one transaction deletes the runs with what cascades from them
(model calls, spans, labels, review items, approvals, forks) and writes the
DeletionRecord with the row counts. Messages the deleted model calls alone
referenced (tracing.store.call_store stores each once, by content) go too: they
are the prompts, and deletion is for personal data.

tracing never imports runs: the cascade is the run model's foreign keys.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from tracing.store.models import DeletionRecord, ModelCall, Retention
from tracing.store.run_sink import run_sink

log = logging.getLogger(__name__)

# Steps per DELETE: a batch takes tens of milliseconds, so the run list and
# the recorders never wait long behind one.
STEP_BATCH = 5_000
# Runs per retention transaction: bounds the cascade's work in one commit.
RETENTION_RUN_BATCH = 200

_DELETE_STEP_BATCH = """
DELETE FROM tracing_step WHERE id IN (
    SELECT id FROM tracing_step WHERE run_id = ANY(%s) LIMIT %s
)
"""
# Messages referenced by the deleted calls and by no call left. The scan of
# suffix_ids has no index (nothing else looks calls up by message): it is a
# deletion's cost, not a page's.
_DELETE_ORPHAN_MESSAGES = """
DELETE FROM tracing_callmessage m WHERE m.id = ANY(%s) AND NOT EXISTS (
    SELECT 1 FROM tracing_modelcall c WHERE m.id = ANY(c.suffix_ids) OR c.tools_id = m.id OR c.params_ref_id = m.id
)
"""


def _labels(counts: dict[str, int]) -> dict[str, int]:
    """Django's per-model counts ("runs.Run": 3) in words ("runs": 3), empty ones left out."""
    out: dict[str, int] = {}
    for label, n in counts.items():
        if n:
            name = label.rpartition(".")[2]
            out[name] = out.get(name, 0) + n
    return out


def _steps_delete(run_ids: Sequence[int]) -> int:
    deleted = 0
    while True:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(_DELETE_STEP_BATCH, [list(run_ids), STEP_BATCH])
            n = cur.rowcount
        deleted += n
        if n < STEP_BATCH:
            return deleted


def runs_delete(*, run_ids: Sequence[int], user, project, what: str = DeletionRecord.What.RUN,
                target: str = "") -> DeletionRecord:
    """Delete these runs (of `project`) and all recorded of them; the record says who and how many rows."""
    Run = run_sink().model
    run_ids = list(Run.objects.filter(pk__in=list(run_ids), project=project).values_list("pk", flat=True))
    # Forks cascade with their parent: their steps go in batches too.
    forks = run_ids
    while forks:
        forks = list(Run.objects.filter(parent_id__in=forks).exclude(pk__in=run_ids).values_list("pk", flat=True))
        run_ids += forks
    steps = _steps_delete(run_ids)
    with transaction.atomic():
        calls = ModelCall.objects.filter(run_id__in=run_ids)
        messages: set[int] = set()
        for suffix, tools, params in calls.values_list("suffix_ids", "tools_id", "params_ref_id").iterator():
            messages.update(suffix or [])
            messages.update(m for m in (tools, params) if m)
        # Steps a recorder wrote meanwhile go with the cascade.
        _, counts = Run.objects.filter(pk__in=run_ids).delete()
        counts = _labels(counts)
        counts["Step"] = counts.get("Step", 0) + steps
        if messages:
            with connection.cursor() as cur:
                cur.execute(_DELETE_ORPHAN_MESSAGES, [sorted(messages)])
                if cur.rowcount:
                    counts["CallMessage"] = cur.rowcount
        record = DeletionRecord.objects.create(
            what=what, target=(target or f"run{'s' if len(run_ids) != 1 else ''} "
                               f"{', '.join(map(str, run_ids[:20]))}{' …' if len(run_ids) > 20 else ''}")[:200],
            project=project, project_name=str(project)[:100], user=user,
            username=user.get_username() if user is not None else "", counts={k: v for k, v in counts.items() if v})
    log.info("deleted %s: %s", record.target, record.counts)
    return record


def retention_sweep(*, now=None) -> list[DeletionRecord]:
    """Every project with a retention: its runs created before `keep_days` ago, RETENTION_RUN_BATCH at a time."""
    now = now or timezone.now()
    Run = run_sink().model
    records = []
    for retention in Retention.objects.select_related("project"):
        cutoff = now - timedelta(days=retention.keep_days)
        while True:
            # Live runs are left alone: a worker is writing them.
            batch = list(Run.objects.filter(project=retention.project, created_at__lt=cutoff)
                         .exclude(status__in=["queued", "running", "awaiting"])
                         .order_by("created_at", "id").values_list("pk", flat=True)[:RETENTION_RUN_BATCH])
            if not batch:
                break
            records.append(runs_delete(run_ids=batch, user=None, project=retention.project,
                                       what=DeletionRecord.What.RETENTION,
                                       target=f"{len(batch)} runs older than {retention.keep_days} days"))
    return records
