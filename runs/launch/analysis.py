"""A stored run judged as a whole: its anchor break and per-step scores (and,
when asked, the watchdog's signals again), written back into the run."""

from __future__ import annotations

from django.db import transaction

from runs.launch.models import Run
from runs.launch.selectors import run_history
from tracing.analysis import analyse
from tracing.models import Step


def run_analyse(run_id: int, *, recompute_signals: bool = False) -> None:
    """Whole-run analysis over the stored steps (when it ends, or after a
    detector changed, or for an imported run that has no signals)."""
    run = Run.objects.select_related("policy").get(pk=run_id)
    rows = {row.index: row for row in Step.objects.filter(run_id=run_id)}
    # A fork is judged on its whole trajectory, the parent's part included.
    records = run_history(run)
    policy = run.policy.as_policy() if run.policy_id else None
    report = analyse(records, task=run.goal, policy=policy, recompute_signals=recompute_signals)
    changed = []
    for record in records:
        row = rows.get(record.index)
        if row is not None and record.meta != row.meta:
            row.meta = record.meta
            changed.append(row)
    with transaction.atomic():
        Step.objects.bulk_update(changed, ["meta"], batch_size=500)
        Run.objects.filter(pk=run_id).update(
            first_anchor_break=report.first_break,
            anchor_reason=report.reason or "",
            anchor_evidence=report.evidence or {},
        )
