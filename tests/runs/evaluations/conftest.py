from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone


@pytest.fixture
def queued(monkeypatch):
    """Captures what would go to the broker (the real path: test_evaluations_worker.py)."""
    sent = []
    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda args, **kw: sent.append((args, kw)))
    return sent


@pytest.fixture
def tasks(db):
    from runs.core.models import Task

    return [Task.objects.create(slug=f"task-{i}", title=f"Task {i}", prompt=f"What is answer {i}?",
                                gold_answer=str(i)) for i in (1, 2)]


@pytest.fixture
def make_evaluation(queued, tasks, user):
    from runs.evaluations.services import EvaluationSpec, evaluation_create
    from tests.projects import project_of

    def make(strategies=("one_retrieval", "react_off"), reruns=2, **fields):
        spec = EvaluationSpec(tasks=tasks, strategies=list(strategies), reruns=reruns, seed=7, **fields)
        return evaluation_create(owner=user, project=project_of(user), spec=spec)

    return make


@pytest.fixture
def end():
    def end(run, *, status="finished", success=None, steps=3, tokens=100, seconds=2.0, stopped_by="", answer=""):
        """Mark a queued run as ended the way run_finish would, with its summary."""
        from runs.core.models import Run

        now = timezone.now()
        Run.objects.filter(pk=run.pk).update(
            status=status, success=success, step_count=steps, prompt_tokens=tokens, completion_tokens=0,
            started_at=now - timedelta(seconds=seconds), finished_at=now, stopped_by=stopped_by,
            final_answer=answer)

    return end
