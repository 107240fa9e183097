"""Celery's autodiscovery imports an app's `tasks` module: this one gathers
the feature packages' tasks so the worker registers them."""

from runs.approvals.tasks import expire_approvals
from runs.breaks.tasks import reanalyse_pattern
from runs.launch.tasks import execute_run, reconcile_runs
from runs.whatif.tasks import execute_whatif

__all__ = ["execute_run", "execute_whatif", "expire_approvals", "reanalyse_pattern", "reconcile_runs"]
